"""Run every `tests/bench/bench_*.py` module's `bench(b)` in one process and write bench-results.json."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from tests.bench.harness import Bench


def main() -> int:
    bench = Bench()
    only = sys.argv[1:]
    package = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if not info.name.startswith("bench_") or (only and info.name.removeprefix("bench_") not in only):
            continue
        print(f"== {info.name}", flush=True)
        importlib.import_module(f"tests.bench.{info.name}").bench(bench)
    bench.write(Path("bench-results.json"))
    print(f"\n{bench.table()}\n\nwrote bench-results.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
