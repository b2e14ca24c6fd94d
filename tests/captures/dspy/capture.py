"""Capture DSPy `dspy.ReAct` programs traced by openinference-instrumentation-dspy.

Run from the repository root with the DSPy venv (see requirements.txt beside this file):

    /work/venvs/dspy/bin/python tests/captures/dspy/capture.py [SCENARIO ...]

The model is DSPy's own test model, `dspy.utils.DummyLM`, fed the scenario's turns as the fields
ReAct asks for (`next_thought`, `next_tool_name`, `next_tool_args`, then `reasoning` and `answer`
for the final extraction). ReAct picks one tool per step and ends with its built-in `finish` tool (a
real traced call: `final: true`, arguments `{}`). The tools are plain functions, as a DSPy user
passes them; ReAct wraps them in `dspy.Tool`. There are no call ids anywhere in DSPy.

Not expressible: c_parallel and i_parallel_random_ids (ReAct makes one tool call per step; there
are no parallel calls). Extra shapes captured here:
- b_sequential_litellm: b_sequential through `dspy.LM("openai/scripted-...")` (litellm, to
  `ScriptedOpenAI`) instead of DummyLM, to show the same span shape with a real LM client.
- b_sequential_streamed: b_sequential_litellm under `dspy.streamify` (stream listeners on
  `next_thought` and `answer`), so every LM call is a streamed chat completion.
- b_sequential_async: b_sequential with `await program.acall(...)`: the run span is `ReAct.aforward`
  and the tool spans `<tool>.acall`.
- k_subclassed_react: a user subclass of `dspy.ReAct` (`WeatherReAct`): the run span is
  `WeatherReAct.forward`, named by the user, with nothing saying it is a ReAct.
- j_named_program: the ReAct inside a user `dspy.Module` subclass (`TravelAssistant`), the usual way
  to name a DSPy program: the only place the name appears is the enclosing span's name.
f_agent_as_tool: the coordinator's tool `weather_expert` is a function that runs another ReAct.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no model-price download

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    Turn,
    find_span,
    truth_for,
    write_capture,
)
from openinference.instrumentation.dspy import DSPyInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

ROOT = HERE.parents[2]
TRACES = ROOT / "tests" / "testdata" / "traces" / "dspy"
TRUTHS = ROOT / "tests" / "testdata" / "truth" / "dspy"

META = {
    "framework": "dspy",
    "framework_version": version("dspy"),
    "instrumentation": f"openinference-instrumentation-dspy {version('openinference-instrumentation-dspy')}",
    "conventions": "OpenInference semantic conventions (openinference.span.kind, input.value, llm.*)",
}
FINISH = "finish"
RUN_SPANS = ("ReAct.forward", "ReAct.aforward", "WeatherReAct.forward")
NAME_NOTE = (
    "DSPy gives a program no name: the capture script's variable names no span records, and the run "
    "span says only the module's class (ReAct.forward), so the run is named ReAct."
)
NOT_EXPRESSIBLE = {
    "c_parallel": "ReAct makes one tool call per step: no parallel calls",
    "i_parallel_random_ids": "ReAct makes one tool call per step, and DSPy has no call ids",
}

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
DSPyInstrumentor().instrument(tracer_provider=PROVIDER)

import dspy  # noqa: E402
from dspy.utils import DummyLM  # noqa: E402


class WeatherReAct(dspy.ReAct):
    """A user's ReAct subclass (k_subclassed_react): its run span is `WeatherReAct.forward`."""


class TravelAssistant(dspy.Module):
    """A user's program holding a ReAct, the usual way to give a DSPy program a name (j_named_program)."""

    def __init__(self, tools: list[Any]) -> None:
        super().__init__()
        self.agent = dspy.ReAct("question -> answer", tools=tools)

    def forward(self, question: str) -> dspy.Prediction:
        return self.agent(question=question)


def _answers(agent: Agent, final_text: str) -> list[dict[str, Any]]:
    """The fields DummyLM returns, one dict per LM call: a ReAct step per call, then the extraction."""
    answers: list[dict[str, Any]] = []
    for turn in agent.turns:
        (call,) = turn.calls  # ReAct: one tool per step
        thought = "I have what I need." if call.name == FINISH else f"Calling {call.name}."
        answers.append({"next_thought": thought, "next_tool_name": call.name, "next_tool_args": dict(call.args)})
    answers.append({"reasoning": "Summarising the observations.", "answer": final_text})
    return answers


def _chat_text(fields: dict[str, Any]) -> str:
    """What a model answers to DSPy's ChatAdapter: `[[ ## field ## ]]` sections, then `completed`."""
    parts = [f"[[ ## {k} ## ]]\n{v if isinstance(v, str) else json.dumps(v)}" for k, v in fields.items()]
    return "\n\n".join([*parts, "[[ ## completed ## ]]"])


def _streamed(program: dspy.Module, question: str) -> dspy.Prediction:
    """`dspy.streamify` with a listener on every step's thought and on the answer: every LM call streams."""
    listeners = [dspy.streaming.StreamListener(signature_field_name=f) for f in ("next_thought", "answer")]
    chunks = list(dspy.streamify(program, stream_listeners=listeners, async_streaming=False)(question=question))
    (prediction,) = [c for c in chunks if isinstance(c, dspy.Prediction)]
    return prediction


def _react(tools: list[Any], lm: Any) -> dspy.ReAct:
    program = dspy.ReAct("question -> answer", tools=tools)
    program.set_lm(lm)
    return program


VARIANTS = {
    "b_sequential_litellm": "b_sequential",
    "b_sequential_async": "b_sequential",
    "b_sequential_streamed": "b_sequential",
    "j_named_program": "a_single_tool",
    "k_subclassed_react": "a_single_tool",
}
"""Extra captures: name -> the canonical scenario they replay."""


def _scenario(name: str) -> Scenario:
    """The scenario `name` (a variant: its canonical scenario under the variant's name)."""
    base = SCENARIOS[VARIANTS.get(name, name)]
    if name == "j_named_program":
        return replace(base, name=name, description="a_single_tool inside a user dspy.Module, TravelAssistant.")
    if name == "k_subclassed_react":
        return replace(base, name=name, description="a_single_tool with a user subclass of dspy.ReAct, WeatherReAct.")
    return replace(base, name=name) if name in VARIANTS else base


def _play(sc: Scenario, finals: dict[str, str], recorder: Recorder) -> list[str]:
    """Run the scenario's programs as a DSPy user would; returns the top-level answers."""

    def program(agent: Agent) -> dspy.ReAct:
        return _react(recorder.tools(agent.tools), DummyLM(_answers(agent, finals[agent.name])))

    if sc.name in ("b_sequential_litellm", "b_sequential_streamed"):
        (agent,) = sc.agents
        turns = [Turn(text=_chat_text(fields)) for fields in _answers(agent, finals[agent.name])]
        with ScriptedOpenAI({agent.model: turns}) as server:
            lm = dspy.LM(f"openai/{agent.model}", api_base=server.base_url, api_key="scripted", cache=False)
            react = _react(recorder.tools(agent.tools), lm)
            answer = (
                _streamed(react, agent.prompt) if sc.name == "b_sequential_streamed" else react(question=agent.prompt)
            )
            server.assert_consumed()
            if sc.name == "b_sequential_streamed":
                assert all(body.get("stream") for body in server.requests), "every LM call streamed"
        return [answer.answer]
    if sc.name == "b_sequential_async":
        (agent,) = sc.agents
        return [asyncio.run(program(agent).acall(question=agent.prompt)).answer]
    if sc.sub_agents:
        coordinator, expert_agent = sc.agents
        expert = program(expert_agent)

        def weather_expert(input: str) -> str:
            """Ask the weather expert agent a question about the weather.

            Args:
                input: The question for the weather expert.
            """
            return str(expert(question=input).answer)

        lm = DummyLM(_answers(coordinator, finals[coordinator.name]))
        return [_react([recorder.wrap(weather_expert)], lm)(question=coordinator.prompt).answer]
    if sc.name == "j_named_program":
        (agent,) = sc.agents
        assistant = TravelAssistant(recorder.tools(agent.tools))
        assistant.set_lm(DummyLM(_answers(agent, finals[agent.name])))
        return [assistant(question=agent.prompt).answer]
    if sc.name == "k_subclassed_react":
        (agent,) = sc.agents
        subclassed = WeatherReAct("question -> answer", tools=recorder.tools(agent.tools))
        subclassed.set_lm(DummyLM(_answers(agent, finals[agent.name])))
        return [subclassed(question=agent.prompt).answer]
    if sc.name == "g_two_runs_one_trace":
        with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
            return [program(a)(question=a.prompt).answer for a in sc.agents]
    return [program(a)(question=a.prompt).answer for a in sc.agents]


def capture(name: str) -> None:
    if name in NOT_EXPRESSIBLE:
        print(f"{name}: skipped ({NOT_EXPRESSIBLE[name]})")
        return
    base = _scenario(name)
    sc = base.with_final_tool(FINISH, arg=None)
    finals = {a.name: a.final_text for a in base.agents}
    recorder = Recorder()
    EXPORTER.clear()
    answers = _play(sc, finals, recorder)
    top_level = [a.name for a in sc.agents if a.name not in sc.sub_agents.values()]
    assert answers == [finals[n] for n in top_level], f"{name}: answers {answers}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    truth = truth_for(
        sc,
        META,
        recorder,
        _run_spans(spans, sc),
        final_tool=FINISH,
        final_arg=None,
        call_ids=False,
        agent_names={a.name: "WeatherReAct" if name == "k_subclassed_react" else "ReAct" for a in sc.agents},
    )
    truth["agent_name_note"] = NAME_NOTE
    if name == "j_named_program":
        truth["agent_name_note"] = (
            NAME_NOTE + " Here the user named the program by its class: the ReAct runs inside the user's "
            "dspy.Module subclass TravelAssistant, whose span (TravelAssistant.forward, a CHAIN span like "
            "every module span) is the run span's parent; no attribute carries the name."
        )
    if name == "k_subclassed_react":
        truth["agent_name_note"] = (
            "The user named the program by subclassing dspy.ReAct: the run span is WeatherReAct.forward "
            "(its class name), and nothing in the trace says it is a ReAct."
        )
    written = write_capture(TRACES, TRUTHS, name, spans, truth)
    print(
        f"{name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def _run_spans(spans: list[ReadableSpan], sc: Scenario) -> dict[str, ReadableSpan]:
    """Each agent's `ReAct.forward` span. Runs start in agent order, except that a sub-agent's run
    starts inside its caller's tool span (f_agent_as_tool), so it is found under that span."""
    react = [s for s in spans if s.name in RUN_SPANS]
    if sc.sub_agents:
        coordinator, expert = sc.agents
        tool_span = find_span(spans, f"{next(iter(sc.sub_agents))}.__call__")
        inner = find_span(react, where=lambda s: s.parent is not None and s.parent.span_id == tool_span.context.span_id)
        outer = find_span(react, where=lambda s: s is not inner)
        return {coordinator.name: outer, expert.name: inner}
    if len(react) != len(sc.agents):
        raise AssertionError(f"{sc.name}: {len(react)} {RUN_SPANS} spans for {len(sc.agents)} agents")
    return {a.name: s for a, s in zip(sc.agents, sorted(react, key=lambda s: s.start_time or 0), strict=True)}


def main(argv: list[str]) -> None:
    names = argv or [*SCENARIOS, *VARIANTS]
    for name in names:
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
