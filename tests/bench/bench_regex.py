"""Match cost of expectation patterns on 4 KB of sender-controlled text, on RE2 (`toolscore.scorers._regex`).

Three figures, each over 4 KB inputs (`max_attribute_bytes`-sized values, a run's input text):
- `regex.re2.4kb.benign.matches_per_s`: a typical selector, `(?i)order [0-9]+\\b`, that does not match (so
  it reads all 4 KB), paired with the same pattern on Python's `re` as the baseline;
- `regex.re2.4kb.probe.matches_per_s`: the hostile probe, `^(a+)+$` on `"a" * 4095 + "!"`, which on `re`
  would not finish (6.6 s at 28 characters, doubling with each one more), so it has no baseline;
- `regex.re2.4kb.fullmatch.matches_per_s`: an argument rule's full match, `[a-z0-9_]+`, on 4 KB that fails at
  the last character.
"""

from __future__ import annotations

import random
import re
import string

from tests.bench.harness import Bench
from toolscore.scorers._regex import compile_pattern

_SIZE = 4096


def _texts(n: int, seed: int = 17) -> list[str]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + " .,-"
    return ["".join(rng.choice(alphabet) for _ in range(_SIZE)) for _ in range(n)]


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: 20 inputs, one pair, for the smoke test."""
    n, runs = (20, 1) if quick else (2000, 7)
    texts = _texts(n)
    benign = r"(?i)order [0-9]+\b"
    ours, theirs = compile_pattern(benign), re.compile(benign)

    def on_re2() -> None:
        for text in texts:
            ours.search(text)

    def on_re() -> None:
        for text in texts:
            theirs.search(text)

    b.pair(
        "regex.re2.4kb.benign.matches_per_s",
        on_re2,
        "regex.re.4kb.benign.matches_per_s",
        on_re,
        n,
        unit="matches/s",
        runs=runs,
    )
    probe, hostile = compile_pattern("^(a+)+$"), "a" * (_SIZE - 1) + "!"
    b.rate(
        "regex.re2.4kb.probe.matches_per_s",
        lambda: [probe.search(hostile) for _ in range(n)],
        n,
        unit="matches/s",
        runs=runs,
    )
    word, tail = compile_pattern("[a-z0-9_]+"), "a" * (_SIZE - 1) + "!"
    b.rate(
        "regex.re2.4kb.fullmatch.matches_per_s",
        lambda: [word.fullmatch(tail) for _ in range(n)],
        n,
        unit="matches/s",
        runs=runs,
    )
