"""Extraction's JSON decoding gives exactly what `json.loads` gives: the same values, types and errors."""

from __future__ import annotations

import json
import math
import random
import re
import struct
from typing import Any

import pytest

from toolscore.collector.extract.json_text import MAX_DEPTH, decode_json
from toolscore.scorers._json_text import compact_json, walked_json


def _same(a: Any, b: Any) -> bool:
    """Equal values of identical types all the way down (1 == 1.0 == True are told apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return bool(a == b)


def _outcome(text: str) -> tuple[str, Any]:
    try:
        return "value", json.loads(text)
    except ValueError as error:
        return "error", str(error)


@pytest.mark.parametrize(
    "text",
    [
        '{"q": "flights", "n": [1, 2.5, -0.0, true, null], "nested": {"a": {}}}',
        '{"a": 1, "a": 2}',  # duplicate keys: the last wins in both
        "9223372036854775807",  # int64 max
        "-9223372036854775808",
        "9223372036854775808",  # beyond int64: orjson gives a float, json an int
        "18446744073709551616",
        "-9223372036854775809",
        '{"id": 123456789012345678901234567890}',
        '"user 12345678901234567890"',  # a long digit run inside a string: still the same
        "0.1234567890123456789012",
        "1e400",  # overflows to inf in json; orjson refuses
        "-1e400",
        "NaN",
        "Infinity",
        "[-Infinity]",
        '"\\u00e9\\u2028 caf\u00e9 \U0001f600"',
        " \t\n[1]\r\n ",
        "",
        "   ",
        "{",
        "[1,]",
        '{"a": 1} trailing',
        "\ufeff[1]",  # BOM: json refuses it in a str
        '"tab\there"',  # a raw control character: refused by both
        "01",
        "1.",
        ".5",
        "-",
        "true false",
        "[" * 50 + "]" * 50,
    ],
)
def test_documents_decode_as_json_loads_decodes_them(text: str) -> None:
    kind, expected = _outcome(text)
    if kind == "error":
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):  # json's own error
            decode_json(text)
    else:
        assert _same(decode_json(text), expected)


def test_text_with_lone_surrogates_decodes_as_json_loads_decodes_it_but_writable() -> None:
    text = '{"name": "\ud83d broken"}'

    assert json.loads(text) == {"name": "\ud83d broken"}
    assert decode_json(text) == {"name": "\ufffd broken"}


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([rng.randint(-1000, 1000), rng.randint(-(2**70), 2**70), rng.randint(-(2**63), 2**64)])
    if kind == 1:
        value: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return value if math.isfinite(value) else rng.random()
    if kind == 2:
        points = [rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0xD7FF), 0x1F600]) for _ in range(8)]
        return "".join(map(chr, points))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.random() * 10 ** rng.randint(-30, 30)
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {f"k{rng.randrange(6)}": _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


@pytest.mark.parametrize("text", ["[" * 30_000 + "]" * 30_000, '{"a":' * 5_000 + '"\\ud800"' + "}" * 5_000])
def test_text_nested_deeper_than_the_decoders_go_is_a_value_error(text: str) -> None:
    """`json.loads` raises RecursionError there; callers treat a ValueError as "not JSON"."""
    with pytest.raises(ValueError, match="nested deeper"):
        decode_json(text)


@pytest.mark.parametrize("open_close", [("[", "]"), ('{"k":', "}")])
def test_text_nested_more_than_max_depth_is_a_value_error_though_the_decoders_take_it(
    open_close: tuple[str, str],
) -> None:
    """orjson decodes 1,000 levels, but every writer and comparer after it recurses per level."""
    opening, closing = open_close
    deepest = opening * MAX_DEPTH + "1" + closing * MAX_DEPTH
    assert decode_json(deepest) == json.loads(deepest)
    for levels in (MAX_DEPTH + 1, 1_000):
        with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} levels"):
            decode_json(opening * levels + "1" + closing * levels)


def test_many_brackets_at_little_depth_and_brackets_in_strings_are_not_too_deep() -> None:
    wide = json.dumps({"calls": [{"a": [1, {"b": []}]} for _ in range(400)]})
    assert decode_json(wide) == json.loads(wide)
    quoted = json.dumps({"text": "[" * 5_000})
    assert decode_json(quoted) == {"text": "[" * 5_000}


def test_compact_json_is_the_standard_encoders_text_at_any_depth() -> None:
    rng = random.Random(11)
    for _ in range(500):
        document = _random_value(rng)
        expected = json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=str)
        assert compact_json(document) == expected
        assert walked_json(document) == expected
    deep: list[object] = ["x"]
    for _ in range(5_000):
        deep = [deep]
    assert compact_json(deep) == "[" * 5_000 + '["x"]' + "]" * 5_000
    assert compact_json({"k": deep}, max_chars=10) == '{"k":[[[[['


def test_random_documents_decode_to_identical_values_and_types() -> None:
    rng = random.Random(20261124)
    for _ in range(3000):
        document = _random_value(rng)
        for text in (json.dumps(document), json.dumps(document, ensure_ascii=False, indent=1)):
            assert _same(decode_json(text), json.loads(text)), text


def test_numbers_spelled_many_ways_decode_to_the_same_float() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if not math.isfinite(value):
            continue
        for text in (repr(value), f"{value:.25g}", f"{value:.3e}", f"{value:.17E}"):
            assert _same(decode_json(text), json.loads(text)), text


def test_lone_surrogates_in_decoded_strings_become_replacement_characters() -> None:
    """`\\ud800` is valid JSON, but no UTF-8 writer (sqlite3, protobuf, OTLP) takes the str it spells."""
    text = '{"city": "\\ud800", "\\udc00k": ["\\ud83d", 1], "pair": "\\ud83d\\ude00", "nan": NaN}'
    decoded = decode_json(text)
    assert decoded["city"] == "\ufffd"
    assert decoded["\ufffdk"] == ["\ufffd", 1]
    assert decoded["pair"] == "\U0001f600"  # a surrogate pair is one character, kept
    assert math.isnan(decoded["nan"])
    assert json.dumps(decoded, ensure_ascii=False).encode()  # writable as UTF-8
