"""The fuzz targets (`make fuzz`) on their seeds and on the probe's hostile shapes, without atheris: a target
that no longer runs, or a reader that raises anything but its own refusal on them, fails here."""

from __future__ import annotations

import random

import pytest

from tests.fuzz.targets import TARGETS

HOSTILE = [
    b"",
    b"\xff\xfe\x00",
    b"[" * 3000 + b"]" * 3000,
    b"{" * 3000,
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + b"{}," * 1000 + b"{}]}]}]}",
    b"\x0a\xff\xff\xff\xff\x0f",  # a length past the end
    b"\x0a\x02\x12\x00" * 1000,
    b"name: a\nmatch: {agent: {regex: '^(a+)+$'}}\nscorers: [{type: tool_selection, expected_tool: x}]\n",
    b"- &a [*a]\n",
]


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_target_has_seeds_from_testdata(name: str) -> None:
    assert len(TARGETS[name].seeds()) >= 5


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_target_takes_its_seeds_and_the_hostile_shapes(name: str) -> None:
    target = TARGETS[name]
    for seed in target.seeds():
        target.run(seed.read_bytes())
    for data in HOSTILE:
        target.run(data)


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_target_takes_its_seeds_mutated(name: str) -> None:
    """A few hundred byte flips, truncations and splices of the seeds: what atheris starts from, in little."""
    rng = random.Random(27)
    seeds = [seed.read_bytes() for seed in TARGETS[name].seeds()]
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        if data and rng.random() < 0.5:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            cut = rng.randint(0, len(data))
            data = data[:cut] + bytearray(rng.choice(seeds)[cut:])
        TARGETS[name].run(bytes(data))
