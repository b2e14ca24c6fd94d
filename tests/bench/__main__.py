"""Run every `tests/bench/bench_*.py` module's `bench(b)`, each in a fresh process, and write bench-results.json.

One process per module so that no figure depends on which benchmarks ran before it: a module that
leaves threads, caches or a large heap behind (the garbage collector's full passes cost in proportion
to everything the process holds) would otherwise tax whichever module comes next. A figure and its
baseline are still always measured together, in the same process.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.harness import Bench


def _modules(only: list[str]) -> list[str]:
    package = Path(__file__).parent
    names = sorted(info.name for info in pkgutil.iter_modules([str(package)]) if info.name.startswith("bench_"))
    known = [name.removeprefix("bench_") for name in names]
    for name in only:
        if name not in known:
            print(f"unknown benchmark {name!r}; known: {', '.join(known)}", file=sys.stderr)
            raise SystemExit(2)
    return [name for name in names if not only or name.removeprefix("bench_") in only]


def _run_one(module: str, out: Path, *, quick: bool) -> int:
    """The child's side: one module's benchmarks, its figures written to `out`."""
    bench = Bench()
    run = importlib.import_module(f"tests.bench.{module}").bench
    if not quick:
        run(bench)
    elif "quick" in inspect.signature(run).parameters:
        run(bench, quick=True)
    else:
        print(f"{module} has no quick size: skipped", flush=True)
    bench.write(out)
    return 0


def main(argv: list[str]) -> int:
    """`python -m tests.bench [--quick] [NAME...]`: NAME is a module without `bench_` (all when none).

    `--quick` runs each benchmark at its smoke-test size: it checks the plumbing, its figures mean nothing.
    """
    quick = "--quick" in argv
    argv = [arg for arg in argv if arg != "--quick"]
    if argv[:1] == ["--one"]:
        return _run_one(argv[1], Path(argv[2]), quick=quick)
    bench = Bench()
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="toolscore-bench-") as tmp:
        for module in _modules(argv):
            print(f"== {module}", flush=True)
            out = Path(tmp) / f"{module}.json"
            command = [sys.executable, "-m", "tests.bench", "--one", module, str(out)] + ["--quick"] * quick
            done = subprocess.run(command, check=False)
            if done.returncode != 0:
                failed.append(f"{module} (exit {done.returncode})")
                continue
            bench.merge(Bench.read(out))
    bench.write(Path("bench-results.json"))
    print(f"\n{bench.table()}\n\nwrote bench-results.json")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
