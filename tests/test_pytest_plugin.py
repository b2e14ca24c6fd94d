"""The pytest plugin, exercised through pytest's own `pytester` around a real pydantic-ai agent.

The inner sessions load the plugin with `-p` and entry-point autoloading off, so they test the
plugin module itself whether or not this checkout's entry point is installed.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, Reply

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent
PLUGIN = "toolscore.collector.pytest_plugin"

AGENT_APP = '''
"""A pydantic-ai weather agent whose scripted model asks for the weather in `city`, then answers."""

from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings


def weather_agent(tracer_provider, city):
    def scripted(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": city, "unit": "celsius"})])
        return ModelResponse(parts=[TextPart(f"Sunny in {city}.")])

    settings = InstrumentationSettings(tracer_provider=tracer_provider)
    agent = Agent(FunctionModel(scripted), name="weather", capabilities=[Instrumentation(settings=settings)])

    @agent.tool_plain
    def get_weather(city: str, unit: str) -> str:
        return f"Sunny in {city}"

    return agent
'''

EXPECTATIONS = """
expectations:
  - name: weather.paris
    match: {agent: weather}
    scorers:
      - type: trajectory
        expected: [{name: get_weather, args: {city: Paris}}]
        args_match: {mode: subset}
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(agent_app=AGENT_APP)
    pytester.syspathinsert()
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider", *args)


def test_assert_calls_passes_when_the_agent_made_the_expected_calls(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather in Paris?")
            scores = toolscore_runs.assert_calls(
                agent="weather", expected=[{"name": "get_weather", "args": {"city": "Paris"}}],
                mode="flexible", args_match={"mode": "subset"},
            )
            assert [s.value for s in scores] == [1.0]
            assert [r.tool_names for r in toolscore_runs.runs("weather")] == [["get_weather"]]
        """
    )
    run(suite).assert_outcomes(passed=1)


def test_assert_calls_fails_with_the_readable_diff(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_rome(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather in Rome?")
            toolscore_runs.assert_calls(
                agent="weather",
                expected=[{"name": "get_weather", "args": {"city": "Rome", "unit": "celsius"}}, "send_email"],
            )
        """
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "tool calls differ from the expected ones",
            "run 1 of 1 (weather: get_weather): exact mode: *",
            "  trajectory mode=exact, by position:",
            '  ✗ wrong args  1. get_weather(city="Rome", unit="celsius")  1. get_weather(city="Paris", unit="celsius")',
            '                  city: expected "Rome", got "Paris"',
            "  ✗ missing     2. send_email                                -",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_assert_calls_names_the_agents_seen_when_none_matches(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_other_agent(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather?")
            toolscore_runs.assert_calls(agent="billing", expected=["refund"])
        """
    )
    result = run(suite)
    result.assert_outcomes(failed=1)
    assert "no run of agent 'billing' was recorded (runs recorded: ['weather'])" in result.stdout.lines


def test_expectations_from_the_ini_option_are_scored_by_the_processor(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", expectations=EXPECTATIONS)
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather in Paris?")
            toolscore_runs.assert_expectations()
            (score,) = toolscore_runs.scores("weather")
            assert score["toolscore.expectation.name"] == "weather.paris"
            assert score["gen_ai.evaluation.score.label"] == "pass"

        def test_oslo(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Oslo").run_sync("Weather in Oslo?")
            toolscore_runs.assert_expectations()
        """
    )
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "toolscore expectations not met:",
            "weather (get_weather): weather.paris / trajectory = 0.5: *",
            '*✗ wrong args  1. get_weather(city="Paris")  1. get_weather(city="Oslo", unit="celsius")',
            '*city: expected "Paris", got "Oslo"',
        ]
    )


def test_expectations_fixture_can_be_overridden_with_mappings(suite: pytest.Pytester) -> None:
    suite.makeconftest(
        """
        import pytest

        @pytest.fixture
        def toolscore_expectations():
            return [{"name": "w", "match": {"agent": "weather"},
                     "scorers": [{"type": "tool_selection", "expected_tool": "get_weather"}]}]
        """
    )
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather?")
            toolscore_runs.assert_expectations()
            assert [s["gen_ai.evaluation.name"] for s in toolscore_runs.scores()] == ["tool_selection"]
        """
    )
    run(suite).assert_outcomes(passed=1)


def test_a_run_inferred_under_the_applications_own_root_span_is_scored_too(suite: pytest.Pytester) -> None:
    """Tool spans under a root no convention recognises: the run is inferred at that root, whose span goes on
    before the run is known, so its scores are in logs and metrics only, never in a span event."""
    suite.makefile(
        ".yaml",
        expectations="""
        - name: handler.weather
          match: {attributes: {app.case: weather-1}}
          scorers: [{type: tool_selection, expected_tool: get_weather}]
        """,
    )
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(
        test_handler="""
        import pytest

        TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"city": "Paris"}'}

        @pytest.mark.parametrize("tool", ["get_weather", "get_time"])
        def test_handler(toolscore_runs, tool):
            tracer = toolscore_runs.tracer_provider.get_tracer("app")
            with tracer.start_as_current_span("handle_request", attributes={"app.case": "weather-1"}):
                attributes = {**TOOL, "gen_ai.tool.name": tool}
                with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
                    pass
            toolscore_runs.assert_expectations()
            (score,) = toolscore_runs.scores("handle_request")
            assert score["toolscore.expectation.name"] == "handler.weather"
        """
    )
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "toolscore expectations not met:",
            "handle_request (get_time): handler.weather / tool_selection = 0.0: expected tool 'get_weather' *",
        ]
    )
    result.stdout.no_fnmatch_line("*no run matched*")


ASSERTING_TEST = """
from agent_app import weather_agent

def test_paris(toolscore_runs):
    weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather?")
    toolscore_runs.assert_expectations()
"""
"""A test that runs the weather agent once and asks for every expectation to be met."""


def test_no_expectation_matched_fails_assert_expectations_naming_them_and_the_runs(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", expectations=EXPECTATIONS.replace("agent: weather", "agent: forecaster"))
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(test_weather=ASSERTING_TEST)
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["no run matched any toolscore expectation (weather.paris); runs recorded: weather: get_weather"]
    )


def test_a_run_matched_but_sampled_out_fails_assert_expectations_naming_the_expectation_and_rate(
    suite: pytest.Pytester,
) -> None:
    """Not "no run matched": the run matched, and its scorer's `sample_rate` (by trace id) left it out."""
    rare = EXPECTATIONS.replace("args_match: {mode: subset}", "args_match: {mode: subset}\n        sample_rate: 1e-9")
    suite.makefile(".yaml", expectations=rare)
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(test_weather=ASSERTING_TEST)
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "no toolscore score to check:",
            "weather: get_weather: weather.paris / trajectory matched but not scored, sampled out (sample_rate 1e-09: "
            "the trace id decides which runs are scored)",
        ]
    )
    result.stdout.no_fnmatch_line("*no run matched*")


def test_assert_expectations_without_any_configured_says_how_to_give_them(suite: pytest.Pytester) -> None:
    """Not "no run matched": the ini option was never set, which is what the author has to fix."""
    suite.makepyfile(test_weather=ASSERTING_TEST)
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["no toolscore expectations to score against: set `toolscore_expectations = PATH` (files or *"]
    )
    result.stdout.no_fnmatch_line("*no run matched*")


def judged_expectations(server: OpenAIServer) -> str:
    """`EXPECTATIONS` with an LLM judge on the scripted server next to the trajectory scorer."""
    judge = (
        f"      - {{type: llm_judge, model: openai/judge-test, api_base: '{server.base_url}', api_key: test,"
        " max_retries: 0, timeout_s: 60}\n"
    )
    return EXPECTATIONS + judge


JUDGE_VERDICT = Reply.json(
    {
        "evaluations": [{"call": 1, "tool_called": "get_weather", "was_appropriate": True, "reasoning": "asked"}],
        "missing_tools": [],
        "no_tool_appropriate": None,
        "reason": "ok",
    }
)


def test_llm_judges_are_skipped_unless_the_session_enables_them(
    suite: pytest.Pytester, openai_server: OpenAIServer
) -> None:
    """As `toolscore eval` without `--judge`: no request reaches the model, the deterministic scorers decide,
    and the output says the judge was skipped and how to enable it."""
    suite.makefile(".yaml", expectations=judged_expectations(openai_server))
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather in Paris?")
            toolscore_runs.assert_expectations()
            assert [s["gen_ai.evaluation.name"] for s in toolscore_runs.scores()] == ["trajectory"]

        def test_oslo(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Oslo").run_sync("Weather in Oslo?")
            toolscore_runs.assert_expectations()
        """
    )
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    assert openai_server.requests == []
    result.stdout.fnmatch_lines(
        [
            "toolscore expectations not met:",
            "weather (get_weather): weather.paris / trajectory = 0.5: *",
            "not scored:",
            "weather: get_weather: weather.paris / llm_judge matched but not scored, skipped: LLM judges are not run "
            "unless enabled (`--toolscore-judge`, or `toolscore_judge = true` in the pytest ini)",
            "toolscore: 2 LLM-judge score(s) skipped: judges are not run unless enabled (`--toolscore-judge`, *",
        ]
    )


def test_a_run_only_llm_judges_would_score_is_a_skipped_test_while_judges_are_off(
    suite: pytest.Pytester, openai_server: OpenAIServer
) -> None:
    """Neither passed nor failed, as `toolscore eval` counts such a run without `--judge`; the reason says why."""
    judge_only = judged_expectations(openai_server).replace(
        "      - type: trajectory\n        expected: [{name: get_weather, args: {city: Paris}}]\n"
        "        args_match: {mode: subset}\n",
        "",
    )
    suite.makefile(".yaml", expectations=judge_only)
    suite.makeini("[pytest]\ntoolscore_expectations = expectations.yaml\n")
    suite.makepyfile(test_weather=ASSERTING_TEST)
    result = run(suite, "-rs")
    result.assert_outcomes(skipped=1)
    assert openai_server.requests == []
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * no toolscore score to check: weather: get_weather: weather.paris / llm_judge matched but not "
            "scored, skipped: LLM judges are not run unless enabled *"
        ]
    )


@pytest.mark.parametrize(("ini", "args"), [("toolscore_judge = true\n", ()), ("", ("--toolscore-judge",))])
def test_llm_judges_run_with_the_ini_option_or_the_command_line_flag(
    suite: pytest.Pytester, openai_server: OpenAIServer, ini: str, args: tuple[str, ...]
) -> None:
    openai_server.push(JUDGE_VERDICT)
    suite.makefile(".yaml", expectations=judged_expectations(openai_server))
    suite.makeini(f"[pytest]\ntoolscore_expectations = expectations.yaml\n{ini}")
    suite.makepyfile(
        test_weather="""
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(toolscore_runs.tracer_provider, "Paris").run_sync("Weather in Paris?")
            toolscore_runs.assert_expectations()
            scores = {s["gen_ai.evaluation.name"]: s["gen_ai.evaluation.score.label"] for s in toolscore_runs.scores()}
            assert scores == {"trajectory": "pass", "llm_judge": "pass"}
            assert toolscore_runs.not_scored() == []
        """
    )
    # In a child process: litellm's import adds a sys.meta_path finder that an in-process run would leave
    # behind after unloading its module, breaking the next in-process run's package metadata lookups.
    result = suite.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", *args, timeout=120)
    result.assert_outcomes(passed=1)
    assert len(openai_server.requests) == 1
    assert "Weather in Paris?" in openai_server.prompts()[0]
    result.stdout.no_fnmatch_line("*LLM-judge score(s) skipped*")


def test_plugin_is_declared_as_a_pytest11_entry_point() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["entry-points"]["pytest11"] == {"toolscore": PLUGIN}


def test_loading_the_plugin_does_not_load_the_pipeline_and_toolscore_never_loads_pytest() -> None:
    code = (
        "import sys; import toolscore.collector, toolscore.collector.cli, toolscore.scorers;"
        "assert 'pytest' not in sys.modules, 'pytest imported by toolscore';"
        f"import {PLUGIN};"
        "assert 'toolscore.collector.pipeline' not in sys.modules;"
        "assert 'opentelemetry.sdk.trace' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT)


GLOBAL_PROVIDER_CONFTEST = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

APP_EXPORT = InMemorySpanExporter()  # the application's own export, which must see every span unchanged
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(APP_EXPORT))
trace.set_tracer_provider(provider)
"""


def run_isolated(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """In a subprocess: the global tracer provider can be set once per process, and these sessions set it."""
    return pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", *args)


def test_runs_on_the_applications_global_sdk_provider_are_recorded(suite: pytest.Pytester) -> None:
    suite.makeconftest(GLOBAL_PROVIDER_CONFTEST)
    suite.makepyfile(
        test_weather="""
        from conftest import APP_EXPORT
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            weather_agent(None, "Paris").run_sync("Weather in Paris?")  # None: the global tracer provider
            toolscore_runs.assert_calls(agent="weather", expected=[{"name": "get_weather", "args": {"city": "Paris"}}],
                                        mode="flexible", args_match={"mode": "subset"})
            exported = {span.name for span in APP_EXPORT.get_finished_spans()}
            assert "invoke_agent weather" in exported or "agent run" in exported, exported
            assert not any(k.startswith("toolscore.") for s in APP_EXPORT.get_finished_spans() for k in s.attributes)

        def test_rome_sees_only_its_own_run(toolscore_runs):
            weather_agent(None, "Rome").run_sync("Weather in Rome?")
            assert [run.calls[0].args["city"] for run in toolscore_runs.runs("weather")] == ["Rome"]
        """
    )
    result = run_isolated(suite)
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("conftest", "before_run", "hint"),
    [
        (
            "",
            "",
            "no span was recorded, and no global tracer provider is set: point the agent's instrumentation at "
            "`toolscore_runs.tracer_provider`",
        ),
        (
            "",
            "trace.set_tracer_provider(TracerProvider())",
            "no span was recorded; the global tracer provider was set during the test, after `toolscore_runs` "
            "started, so its spans were not read: set it before the test (a fixture or conftest.py), or point the "
            "agent's instrumentation at `toolscore_runs.tracer_provider`",
        ),
    ],
    ids=["no-global-provider", "set-during-the-test"],
)
def test_a_run_the_fixture_could_not_see_is_explained(
    suite: pytest.Pytester, conftest: str, before_run: str, hint: str
) -> None:
    suite.makepyfile(
        test_weather=f"""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from agent_app import weather_agent

        def test_paris(toolscore_runs):
            {before_run}
            weather_agent(None, "Paris").run_sync("Weather in Paris?")
            toolscore_runs.assert_calls(agent="weather", expected=["get_weather"])
        """
    )
    result = run_isolated(suite)
    result.assert_outcomes(failed=1)
    assert "no run of agent 'weather' was recorded (runs recorded: none)" in result.stdout.lines
    assert hint in result.stdout.lines
