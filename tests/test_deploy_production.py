"""The production starter (deploy/expectations/production.yaml): one expectation per agent, matched on the agent
alone, with the four reference-free scorers; scored over the `toolscore demo` runs, whose chat spans offer each
agent's tools (`gen_ai.tool.definitions`)."""

from __future__ import annotations

import json
from pathlib import Path

from toolscore.collector.cli.demo_runs import DEMO_RUNS, DemoCall, DemoRun, make_demo_spans
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.registry._files import load_file
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.sources.sdk import spans_from_readable
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import Score, ToolSpec

PRODUCTION = Path(__file__).parent.parent / "deploy" / "expectations" / "production.yaml"
FOUR = ["tool_policy", "args_valid", "efficiency", "tool_errors"]


def test_each_agent_has_one_expectation_matched_on_the_agent_alone_with_the_four_scorers() -> None:
    expectations = load_file(PRODUCTION)
    agents = [e.match.agent.model_dump_json() for e in expectations if e.match.agent is not None]
    assert len(set(agents)) == len(expectations)
    for expectation in expectations:
        assert set(expectation.match.model_dump(exclude_defaults=True)) == {"agent"}, expectation.name
        assert [s.scorer.type for s in expectation.scorers] == FOUR, expectation.name


def _catalog(records: list[SpanRecord]) -> tuple[ToolSpec, ...]:
    """The tools the demo offers its model, read here from `gen_ai.tool.definitions` as extraction reads them."""
    found: dict[str, ToolSpec] = {}
    for record in records:
        for tool in json.loads(record.attributes.get("gen_ai.tool.definitions", "[]")):
            found.setdefault(tool["name"], ToolSpec(name=tool["name"], parameters=tool["parameters"]))
    return tuple(found.values())


def _verdicts(runs: tuple[DemoRun, ...]) -> dict[str, dict[str, float]]:
    index = ExpectationIndex(load_file(PRODUCTION))
    verdicts: dict[str, dict[str, float]] = {}
    for run_def, spans in zip(runs, make_demo_spans(runs), strict=True):
        records = spans_from_readable(spans)
        outer = next(run for run in rebuild_runs(records) if run.parent_span_id is None)
        run = outer if outer.available_tools else outer.model_copy(update={"available_tools": _catalog(records)})
        results = {}
        for expectation in index.match(run):
            for scorer in expectation.scorers:
                result = scorer.scorer.score(run)
                assert isinstance(result, Score), result
                results[result.name] = result.value
        verdicts[run_def.title] = results
    return verdicts


def test_the_demo_runs_keep_every_rule() -> None:
    verdicts = _verdicts(DEMO_RUNS)
    perfect = dict.fromkeys(FOUR, 1.0)
    assert verdicts["right: search, then book"] == perfect
    assert (
        verdicts["wrong: searched the wrong destination"] == perfect
    )  # no rule knows the destination: trajectories do
    assert verdicts["right: two cities looked up in parallel"] == perfect
    assert verdicts["right: checks the calendar, then delegates the booking"] == perfect
    assert verdicts["wrong: looked for hotels, booked nothing"] == perfect


def test_a_run_breaking_the_rules_is_caught_with_no_reference_run() -> None:
    reckless = DemoRun(
        "books twice without a search, passes a seat the tool lacks, cancels",
        "demo-travel-agent",
        "Book me a flight from SFO to JFK on May 4",
        (
            (DemoCall("book_flight", {"flight_id": "UA 1", "seat": "2A"}, {"confirmation": "A"}),),
            (DemoCall("book_flight", {"flight_id": "UA 2"}, {"confirmation": "B"}),),
            (DemoCall("cancel_flight", {"confirmation": "A"}, "cancelled"),),
        ),
    )
    verdicts = _verdicts((reckless,))[reckless.title]
    assert verdicts == {"tool_policy": 0.0, "args_valid": 1 / 3, "efficiency": 1.0, "tool_errors": 1.0}


def test_the_dashboard_shows_each_scorers_pass_rate_with_no_panel_per_scorer() -> None:
    dashboard = json.loads((PRODUCTION.parent.parent / "grafana" / "toolscore.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    by_scorer = [e for e in exprs if e.startswith("sum by (gen_ai_evaluation_name) (rate(toolscore_evaluations_total")]
    assert by_scorer, "a panel groups verdicts by scorer"
    assert not any(kind in e for e in exprs for kind in FOUR)
