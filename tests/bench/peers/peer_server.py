"""The Python peers, timed on toolscore's cases: run by the benchmark environment's Python, not toolscore's.

    tests.bench.bench_peers (toolscore's venv) ─stdin: cases, then timing commands─→ this script (.venv-bench)
                                                ←─stdout: one JSON line per command─┘

The first line read holds the cases (expected calls, actual runs, toolscore's score for each
peer's case); the reply reports, for every case, the peer's score and whether its verdict agrees
with toolscore's. Each later line asks for one timed pass, `{"peer", "n", "repeat"}`, answered with
the evaluations per second of CPU time of this process, so the caller can interleave a toolscore
pass with each peer pass. The peers' inputs are built once, before timing, as toolscore's runs are.

No network: an audit hook refuses every socket connection and name lookup and counts them, and
the reply reports the count. Telemetry is switched off with each peer's own variables before it is
imported (also set by the caller). No peer here needs an LLM, but deepeval's ToolCorrectnessMetric
builds its judge model when constructed (without `OPENAI_API_KEY` it refuses to start), though it
only asks it with `available_tools`: it gets a stand-in model that fails the run if it is ever called.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

ENV = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TEST_TRACKING": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
}
"""Every peer's telemetry and update checks off; `bench_peers` sets the same for the subprocess."""

_blocked: list[str] = []


def _no_network(event: str, args: tuple[Any, ...]) -> None:
    if event in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
        target = args[1] if event == "socket.connect" else args[0]
        if isinstance(target, tuple) and target and str(target[0]).startswith("/"):
            return  # a Unix socket path, not the network
        _blocked.append(f"{event} {target!r}")
        raise PermissionError(f"network refused in the benchmark: {event} {target!r}")


Evaluate = Callable[[], float]
Batch = Callable[[int], None]


def _deepeval(case: dict[str, Any]) -> Callable[[list[dict[str, Any]]], tuple[Evaluate, Batch]]:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall

    class NoLLM(DeepEvalBaseLLM):  # type: ignore[misc]
        """Stands in for the judge model the metric insists on building; any call to it fails the benchmark."""

        def load_model(self) -> None:
            return None

        def generate(self, *args: Any, **kwargs: Any) -> str:
            raise AssertionError("deepeval's ToolCorrectnessMetric asked the LLM")

        async def a_generate(self, *args: Any, **kwargs: Any) -> str:
            raise AssertionError("deepeval's ToolCorrectnessMetric asked the LLM")

        def get_model_name(self) -> str:
            return "no-llm"

    metric = ToolCorrectnessMetric(model=NoLLM(), async_mode=False, include_reason=False)
    expected = [ToolCall(name=case["expected_tool"])]

    def prepare(calls: list[dict[str, Any]]) -> tuple[Evaluate, Batch]:
        called = [ToolCall(name=c["name"], input_parameters=c["args"]) for c in calls]
        test_case = LLMTestCase(
            input="Plan the trip", actual_output="Done", tools_called=called, expected_tools=expected
        )
        return _sync(lambda: float(metric.measure(test_case, _show_indicator=False)))

    return prepare


def _ragas(case: dict[str, Any]) -> Callable[[list[dict[str, Any]]], tuple[Evaluate, Batch]]:
    from ragas.messages import AIMessage, HumanMessage, ToolCall
    from ragas.metrics.collections import ToolCallAccuracy

    metric = ToolCallAccuracy(strict_order=True)
    reference = [ToolCall(name=c["name"], args=c["args"]) for c in case["expected"]]
    loop = asyncio.new_event_loop()

    def prepare(calls: list[dict[str, Any]]) -> tuple[Evaluate, Batch]:
        tool_calls = [ToolCall(name=c["name"], args=c["args"]) for c in calls]
        messages = [HumanMessage(content="Plan the trip"), AIMessage(content="", tool_calls=tool_calls)]

        async def batch(repeat: int) -> float:
            value = 0.0
            for _ in range(repeat):
                value = (await metric.ascore(user_input=messages, reference_tool_calls=reference)).value
            return float(value)

        return (lambda: loop.run_until_complete(batch(1))), (lambda repeat: loop.run_until_complete(batch(repeat)))

    return prepare


def _agentevals(case: dict[str, Any]) -> Callable[[list[dict[str, Any]]], tuple[Evaluate, Batch]]:
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="strict", tool_args_match_mode="exact")
    reference = _openai_messages(case["expected"])

    def prepare(calls: list[dict[str, Any]]) -> tuple[Evaluate, Batch]:
        outputs = _openai_messages(calls)
        return _sync(lambda: float(evaluator(outputs=outputs, reference_outputs=reference)["score"]))

    return prepare


def _sync(evaluate: Evaluate) -> tuple[Evaluate, Batch]:
    def batch(repeat: int) -> None:
        for _ in range(repeat):
            evaluate()

    return evaluate, batch


def _openai_messages(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user turn, then one assistant message per call with its tool reply: the calls keep their order.

    agentevals' strict mode compares the calls inside one message as a multiset; one call per
    message makes it compare the sequence, as toolscore's `strict` does.
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Plan the trip"}]
    for i, c in enumerate(calls):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "content": "ok", "tool_call_id": f"call_{i}"})
    return messages


PEERS = {"deepeval": _deepeval, "ragas": _ragas, "agentevals": _agentevals}


def _setup(cases: list[dict[str, Any]]) -> tuple[dict[tuple[str, int], Batch], list[dict[str, Any]]]:
    """The timed batch per (peer, n), and every case's agreement with toolscore.

    A verdict is "the run passes" (score 1.0); the scores themselves are reported beside it.
    """
    timed: dict[tuple[str, int], Batch] = {}
    agreement = []
    for case in cases:
        for peer, make in PEERS.items():
            prepare = make(case)
            for run_name, calls in case["runs"].items():
                evaluate, batch = prepare(calls)
                score = evaluate()
                ours = case["toolscore"][peer][run_name]
                agreement.append(
                    {
                        "peer": peer,
                        "n": case["n"],
                        "run": run_name,
                        "peer_score": score,
                        "toolscore_score": ours,
                        "agree": (score == 1.0) == (ours == 1.0),
                    }
                )
                if run_name == case["timed_run"]:
                    timed[(peer, case["n"])] = batch
    return timed, agreement


def main() -> int:
    os.environ.update(ENV)
    sys.addaudithook(_no_network)
    warnings.simplefilter("ignore")
    versions = {}
    from importlib.metadata import version

    for package in ("deepeval", "ragas", "agentevals"):
        versions[package] = version(package)
    cases = json.loads(sys.stdin.readline())
    timed, agreement = _setup(cases)
    reply = {"versions": versions, "agreement": agreement, "network_refused": list(_blocked)}
    print(json.dumps(reply), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        batch = timed[(command["peer"], command["n"])]
        repeat = command["repeat"]
        start = time.process_time()
        batch(repeat)
        elapsed = time.process_time() - start
        print(json.dumps({"evals_per_s": repeat / elapsed, "network_refused": list(_blocked)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
