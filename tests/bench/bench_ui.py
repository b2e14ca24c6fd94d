"""How long the runs page takes to answer with the score store at its default bound (10,000 runs).

The store is filled through `ScoreStore.record` (the collector's own writer) with runs of 5 calls, each scored
by a `trajectory` and a `tool_selection` scorer, a fifth of them failing; the page runs in this process
(`start_ui`, port 0) with the registry that holds the expectation, and each figure is the median wall time
of one HTTP request, answer read whole, over a keep-alive connection: the first runs page, the page
filtered to failing runs, one run with its diffs, and the expectations over 7 days. The issue's target:
under 200 ms each.
"""

from __future__ import annotations

import http.client
import tempfile
import time
from pathlib import Path

from tests.bench.harness import Bench
from toolscore.collector.registry import Registry, RegistryConfig, SqliteStoreConfig
from toolscore.collector.serve.scores import ScoreStoreConfig, runs_page
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.collector.ui import UiConfig, start_ui
from toolscore.scorers import AgentRun, ToolCall

_EXPECTATION = {
    "name": "bench.book",
    "match": {"agent": "travel"},
    "scorers": [
        {
            "type": "trajectory",
            "mode": "strict",
            "expected": [{"name": f"tool_{i}", "args": {"i": i}} for i in range(5)],
        },
        {"type": "tool_selection", "expected_tool": "tool_4"},
    ],
}


def _run(n: int) -> AgentRun:
    wrong = n % 5 == 0
    calls = tuple(
        ToolCall(name=f"tool_{i}", args={"i": i + 1 if wrong and i == 2 else i, "note": "x" * 40}, args_state="value")
        for i in range(5)
    )
    return AgentRun(trace_id=f"{n:032x}", span_id=f"{n:016x}", agent_name="travel", input=f"Book trip {n}", calls=calls)


def _fill(tmp: Path, runs: int) -> tuple[Path, Registry]:
    registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(tmp / "registry.db"))))
    expectation = registry.put(_EXPECTATION)
    store = ScoreStore(ScoreStoreConfig(path=str(tmp / "scores.db"), max_runs=runs, queue_size=4 * runs))
    for n in range(1, runs + 1):
        run = _run(n)
        for scorer in expectation.scorers:
            store.record(run, expectation, scorer.scorer.score(run))
    assert store.close(120), "the store did not write every run"
    return tmp / "scores.db", registry


def _timed(conn: http.client.HTTPConnection, path: str, times: int) -> list[float]:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status == 200, (path, response.status, body[:200])
    return samples


def bench(b: Bench, quick: bool = False) -> None:
    runs = 200 if quick else 10_000
    times = 3 if quick else 25
    with tempfile.TemporaryDirectory(prefix="toolscore-bench-ui-") as tmp:
        db, registry = _fill(Path(tmp), runs)
        server = start_ui(UiConfig(endpoint="127.0.0.1:0"), str(db), registry)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            row = runs_page(db, limit=1)[0].row_id
            for name, path in (
                (f"ui.runs_page_ms.{runs}", "/"),
                (f"ui.runs_page_failing_ms.{runs}", "/?verdict=fail"),
                (f"ui.run_page_ms.{runs}", f"/run/{row}"),
                (f"ui.expectations_page_ms.{runs}", "/expectations?window=7d"),
            ):
                _timed(conn, path, 1)  # warm-up
                b.record(name, _timed(conn, path, times), unit="ms", higher_is_better=False)
        finally:
            conn.close()
            server.stop()
            registry.close()
