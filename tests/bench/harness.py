"""Figures as medians over repeated runs after a warm-up, with the spread and a same-run baseline.

These machines are shared and noisy, so an absolute rate means little on its own: each figure can
name a baseline measured in the same run, and the ratio is what docs/performance.md reports.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Bench", "Figure"]


@dataclass
class Figure:
    value: float
    unit: str
    baseline: str | None
    ratio: float | None
    runs: int
    min: float
    max: float
    target: str = ""
    """The issue's target for the ratio and whether this run met it (`Bench.target`); empty when it has none."""


class Bench:
    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}

    def record(
        self, name: str, samples: list[float], *, unit: str, baseline: str | None = None, higher_is_better: bool = True
    ) -> float:
        """Store the median of `samples`; the ratio is against the baseline figure's median."""
        value = statistics.median(samples)
        ratio = None
        if baseline is not None:
            base = self.figures[baseline].value
            ratio = value / base if base else None
        self.figures[name] = Figure(value, unit, baseline, ratio, len(samples), min(samples), max(samples))
        shown = f"{value:,.1f} {unit}"
        if ratio is not None:
            shown += f"  ({ratio:.2f}x {baseline})"
        print(f"{name:<55} {shown}  [min {min(samples):,.1f}, max {max(samples):,.1f}, n={len(samples)}]", flush=True)
        return value

    def rate(
        self,
        name: str,
        fn: Callable[[], object],
        items: int,
        *,
        unit: str = "items/s",
        baseline: str | None = None,
        runs: int = 7,
        warmup: int = 1,
        clock: Callable[[], float] = time.process_time,
    ) -> float:
        """Median rate of `items` per second of calling `fn()` once, over `runs` runs.

        The default clock is this process's CPU time: on a shared machine, other processes' load
        stretches wall time but not the CPU time single-threaded work takes. Pass
        `clock=time.perf_counter` for work that waits on other threads or processes.
        """
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(runs):
            start = clock()
            fn()
            samples.append(items / (clock() - start))
        return self.record(name, samples, unit=unit, baseline=baseline)

    def pair(
        self,
        name: str,
        fn: Callable[[], object],
        baseline_name: str,
        baseline_fn: Callable[[], object],
        items: int,
        *,
        unit: str = "items/s",
        baseline_unit: str | None = None,
        runs: int = 9,
        clock: Callable[[], float] = time.process_time,
    ) -> float:
        """Rates of `fn` and its baseline, timed alternately so both see the same machine.

        On a shared machine the load drifts over seconds; timing all baseline runs and then all
        measured runs lets that drift into the ratio. Here each measured run follows a baseline
        run, the ratio is the median of the per-pair ratios, and the spread of both is kept.
        """
        fn()
        baseline_fn()
        base_samples, samples, ratios = [], [], []
        for _ in range(runs):
            start = clock()
            baseline_fn()
            base = items / (clock() - start)
            start = clock()
            fn()
            value = items / (clock() - start)
            base_samples.append(base)
            samples.append(value)
            ratios.append(value / base)
        self.record(baseline_name, base_samples, unit=baseline_unit or unit)
        median = statistics.median(samples)
        ratio = statistics.median(ratios)
        self.figures[name] = Figure(median, unit, baseline_name, ratio, runs, min(samples), max(samples))
        print(
            f"{name:<55} {median:,.1f} {unit}  ({ratio:.2f}x {baseline_name},"
            f" pairs {min(ratios):.2f}-{max(ratios):.2f})"
            f"  [min {min(samples):,.1f}, max {max(samples):,.1f}, n={runs}]",
            flush=True,
        )
        return median

    def paired(
        self,
        name: str,
        samples: list[float],
        baseline_name: str,
        base_samples: list[float],
        *,
        unit: str,
        baseline_unit: str | None = None,
        higher_is_better: bool = True,
    ) -> float:
        """Record a figure and its baseline from samples taken in alternation; the ratio is the median of pairs.

        For measurements `pair` cannot take itself (another process's CPU time, a whole tracer per pass):
        `samples[i]` must have been taken right after `base_samples[i]`.
        """
        self.record(baseline_name, base_samples, unit=baseline_unit or unit, higher_is_better=higher_is_better)
        ratios = [value / base for value, base in zip(samples, base_samples, strict=True)]
        median = statistics.median(samples)
        ratio = statistics.median(ratios)
        self.figures[name] = Figure(median, unit, baseline_name, ratio, len(samples), min(samples), max(samples))
        print(
            f"{name:<55} {median:,.1f} {unit}  ({ratio:.2f}x {baseline_name},"
            f" pairs {min(ratios):.2f}-{max(ratios):.2f})"
            f"  [min {min(samples):,.1f}, max {max(samples):,.1f}, n={len(samples)}]",
            flush=True,
        )
        return median

    def target(self, name: str, op: str, bound: float) -> bool:
        """Note whether figure `name`'s ratio meets a target (`op` is ">=" or "<="), print and keep the verdict."""
        figure = self.figures[name]
        ratio = figure.ratio
        met = ratio is not None and (ratio >= bound if op == ">=" else ratio <= bound)
        figure.target = f"{op} {bound}x: {'met' if met else 'NOT met'}"
        shown = "?" if ratio is None else f"{ratio:.2f}x"
        print(f"target {name:<48} {shown} {figure.target}", flush=True)
        return met

    def table(self) -> str:
        """Every figure as one aligned row: name, value, unit, baseline, ratio, spread (min-max over runs)."""
        rows = [("figure", "value", "unit", "baseline", "ratio", "spread", "target")]
        for name, f in self.figures.items():
            ratio = "" if f.ratio is None else f"{f.ratio:.2f}x"
            spread = f"{_num(f.min)}-{_num(f.max)} (n={f.runs})" if f.runs > 1 else ""
            rows.append((name, _num(f.value), f.unit, f.baseline or "", ratio, spread, f.target))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                cell.rjust(w) if i in (1, 4) else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in rows
        ]
        return "\n".join(line.rstrip() for line in lines)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({k: asdict(v) for k, v in self.figures.items()}, indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> Bench:
        """The figures `write` wrote (each benchmark module runs in its own process and writes its own)."""
        bench = cls()
        bench.figures = {name: Figure(**fields) for name, fields in json.loads(path.read_text()).items()}
        return bench

    def merge(self, other: Bench) -> None:
        self.figures.update(other.figures)


def _num(x: float) -> str:
    """Three significant digits at most, grouped: 138,000 / 51.2 / 0.93."""
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:,.3g}"
