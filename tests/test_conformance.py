"""Every recorded Mastra, Evalite, tpmjs and agentevals case through the real `toolscore score` CLI.

All cases go through one subprocess (module fixture); each case is its own test so a failure names
it. toolscore must give the peer's score (to 1e-9) and count fields, report an error where the peer
threw, and follow the documented rule where it deliberately differs (see `conformance.Outcome`).
agentevals' cases run with toolscore's default pairing (greedy, as agentevals pairs).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import (
    AGENTEVALS_CORPUS,
    AGENTEVALS_DEVIATIONS,
    TPMJS_DEVIATIONS,
    Outcome,
    agentevals_args_mode,
    agentevals_deviations,
    agentevals_spec,
    deviation_kinds,
    load_cases,
    outcome,
    peer_view,
    request_line,
    score_all,
    score_lines,
    toolscore_view,
    tpmjs_args_equal,
)

CASES = load_cases()
AGENTEVALS = load_cases(AGENTEVALS_CORPUS)
BY_ID = {case["id"]: case for case in CASES + AGENTEVALS}


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    return score_all(CASES + AGENTEVALS)


def _scored(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, f"toolscore could not score it: {result['error']}"
    return result


def _assert_same_view(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["score"] == pytest.approx(want["score"], abs=1e-9)
    assert {k: v for k, v in got.items() if k != "score"} == {k: v for k, v in want.items() if k != "score"}


@pytest.mark.integration
@pytest.mark.parametrize("case_id", list(BY_ID))
def test_case_matches_peer(case_id: str, results: dict[str, dict[str, Any]]) -> None:
    case, result = BY_ID[case_id], results[case_id]
    expect = outcome(case)
    if expect is Outcome.SAME:
        _assert_same_view(toolscore_view(case, _scored(result)), peer_view(case))
    elif expect in (Outcome.ERROR, Outcome.INVALID_MODE):
        assert "error" in result, f"peer threw {case['output'].get('error')}, toolscore scored {result.get('score')}"
        assert result["error"]["type"] == "invalid_request"
    elif expect is Outcome.AGENTEVALS_DEVIATION:
        _assert_same_view(toolscore_view(case, _scored(result)), peer_view(case))
    elif expect is Outcome.TPMJS_DEVIATION:
        assert case_id in TPMJS_DEVIATIONS, f"reaches tpmjs bugs {deviation_kinds(case)}: check by hand, then list it"
        _, want = TPMJS_DEVIATIONS[case_id]
        view = toolscore_view(case, _scored(result))
        _assert_same_view({k: view[k] for k in want}, want)
    else:
        assert expect is Outcome.NO_OUTPUT_SCORES_ZERO
        view = toolscore_view(case, _scored(result))
        assert (view["score"], view["has_tool_calls"], view["actual_tools"]) == (0.0, False, [])


@pytest.mark.integration
def test_peer_construction_errors_name_the_missing_options(results: dict[str, dict[str, Any]]) -> None:
    construct = [case for case in CASES if case["peer"] == "mastra" and outcome(case) is Outcome.ERROR]
    assert construct, "the corpus should hold Mastra construction errors"
    for case in construct:
        assert "expected_tool or expected_order" in results[case["id"]]["error"]["message"]


@pytest.mark.integration
def test_invalid_evalite_mode_is_rejected_even_where_evalite_never_looks(results: dict[str, dict[str, Any]]) -> None:
    bogus = [case for case in CASES if outcome(case) is Outcome.INVALID_MODE]
    assert {case["output"].get("error") is None for case in bogus} == {True, False}
    for case in bogus:
        assert "mode" in results[case["id"]]["error"]["message"]


def test_deviation_table_lists_exactly_the_cases_that_reach_tpmjs_bugs() -> None:
    flagged = {case["id"]: deviation_kinds(case) for case in CASES if deviation_kinds(case)}
    assert flagged == {case_id: kinds for case_id, (kinds, _) in TPMJS_DEVIATIONS.items()}
    assert set().union(*flagged.values()) == {"null_or_absent", "array_vs_object", "non_object"}


@pytest.mark.integration
def test_where_tpmjs_threw_toolscore_scores_every_time(results: dict[str, dict[str, Any]]) -> None:
    threw = [case for case in CASES if case["peer"] == "tpmjs" and "error" in case["output"]]
    assert threw
    assert all("score" in results[case["id"]] for case in threw)


def test_requests_keep_absent_and_null_args_apart() -> None:
    absent = request_line(BY_ID["tpmjs-args-edge-0064"])
    null = request_line(BY_ID["tpmjs-args-edge-0057"])
    assert "args" not in absent["calls"][0]
    assert "args" not in absent["scorer"]["expected"][0]
    assert null["calls"][0]["args"] is None


def test_mastra_params_and_output_messages_map_onto_the_request() -> None:
    case = next(case for case in CASES if case["peer"] == "mastra" and "output_messages" in case)
    line = request_line(case)
    assert line["output_messages"] == case["output_messages"]
    assert line["scorer"]["type"] == "tool_selection"
    assert set(line["scorer"]) <= {"type", "expected_tool", "strict", "expected_order"}


def test_tpmjs_model_reproduces_its_documented_quirks() -> None:
    assert tpmjs_args_equal([1, 2], {"0": 1, "1": 2})
    assert tpmjs_args_equal({"l": []}, {"l": {}})
    assert tpmjs_args_equal(5, {})
    assert tpmjs_args_equal(True, "")
    assert tpmjs_args_equal("ab", {"0": "a", "1": "b"})
    assert not tpmjs_args_equal({"n": True}, {"n": 1})
    assert not tpmjs_args_equal({"n": None}, {"n": {}})
    with pytest.raises(TypeError):
        tpmjs_args_equal(None, {})


# --- agentevals -----------------------------------------------------------------------------------------

# Cases that fall under each documented deviation, and those where it changes agentevals' score (the case has a
# `documented_output`). Exact counts: a rule that grew to excuse more cases, or a re-recording that moved them,
# must be looked at, not absorbed.
AGENTEVALS_FLAGGED = {"bool_equality": 30, "text_messages": 20, "unordered_containment": 90}
AGENTEVALS_CHANGED = {"bool_equality": 12, "text_messages": 3, "unordered_containment": 23}


def test_agentevals_corpus_covers_every_mode_and_argument_mode() -> None:
    assert len(AGENTEVALS) >= 600
    assert {case["peer"] for case in AGENTEVALS} == {"agentevals"}
    assert all(case["provenance"] == "observed" for case in AGENTEVALS)
    combos = {(case["params"]["trajectory_match_mode"], case["params"]["tool_args_match_mode"]) for case in AGENTEVALS}
    assert len(combos) == 16
    for mode in ("strict", "unordered", "subset", "superset"):
        scores = {case["output"]["score"] for case in AGENTEVALS if case["params"]["trajectory_match_mode"] == mode}
        assert scores == {True, False}, mode
    assert sum("tool_args_match_overrides" in case["params"] for case in AGENTEVALS) >= 90
    assert any(
        len({call["message"] for call in case["expected_calls"]}) < len(case["expected_calls"]) for case in AGENTEVALS
    )


def test_agentevals_deviations_are_counted_and_are_the_only_cases_read_otherwise() -> None:
    """Only a flagged case may have a documented reading that differs; each rule flags as many cases as counted."""
    flagged = dict.fromkeys(AGENTEVALS_DEVIATIONS, 0)
    changed = dict.fromkeys(AGENTEVALS_DEVIATIONS, 0)
    for case in AGENTEVALS:
        kinds = agentevals_deviations(case)
        for kind in kinds:
            flagged[kind] += 1
            changed[kind] += "documented_output" in case
        assert kinds or "documented_output" not in case, f"{case['id']}: read otherwise, but no deviation covers it"
    assert flagged == AGENTEVALS_FLAGGED
    assert changed == AGENTEVALS_CHANGED
    assert sum(outcome(case) is Outcome.AGENTEVALS_DEVIATION for case in AGENTEVALS) <= len(AGENTEVALS) // 4


def test_agentevals_argument_modes_map_by_the_side_agentevals_reads_first() -> None:
    """agentevals' `subset` argument mode: the output call's arguments are in the reference's, except in
    trajectory mode `subset`, which swaps the sides."""
    assert [agentevals_args_mode(mode, "subset") for mode in ("strict", "unordered", "superset", "subset")] == [
        "actual_subset",
        "actual_subset",
        "actual_subset",
        "expected_subset",
    ]
    assert agentevals_args_mode("subset", "superset") == "actual_subset"
    assert agentevals_args_mode("superset", "superset") == "expected_subset"
    case = next(case for case in AGENTEVALS if case["params"].get("tool_args_match_overrides"))
    spec = agentevals_spec(case)
    assert set(spec["tool_args"]) == set(case["params"]["tool_args_match_overrides"])
    assert "pairing" not in spec, "the corpus checks the default pairing"


@pytest.mark.integration
def test_optimal_pairing_departs_from_agentevals_where_greedy_pairing_misses(
    results: dict[str, dict[str, Any]],
) -> None:
    """The corpus holds cases where agentevals' greedy pairing misses a pairing that exists, in every order mode:
    there `pairing: optimal` scores 1 and the default, agentevals' 0."""
    lines = [request_line(case) for case in AGENTEVALS]
    for line in lines:
        line["scorer"]["pairing"] = "optimal"
    optimal = score_lines(lines)
    differ = [case for case in AGENTEVALS if optimal[case["id"]]["score"] != results[case["id"]]["score"]]
    assert {case["params"]["trajectory_match_mode"] for case in differ} == {"strict", "unordered", "subset", "superset"}
    assert len(differ) >= 30
    for case in differ:
        assert (optimal[case["id"]]["score"], results[case["id"]]["score"]) == (1.0, 0.0)
