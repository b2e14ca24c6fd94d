"""Expectation files a hostile or careless hand wrote (not UTF-8, nested thousands deep) are named, by file and
line, on every path that reads them: `toolscore expectations apply`, and a hot reload, which keeps the previous
set. (`toolscore serve` at start: `test_serve_config.py`.)"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.registry_builders import eventually, names
from toolscore.collector.cli import main
from toolscore.collector.registry import InvalidExpectation, Registry
from toolscore.collector.registry._files import load_file

PICK = "scorers: [{type: tool_selection, expected_tool: x}]"
HOSTILE = {
    "not_utf8": (
        b'name: a\nmatch: {agent: "\xfe"}\n',
        2,
        "not UTF-8 text: byte 0xfe at offset 24 (invalid start byte)",
    ),
    "3000_deep": (b"[" * 3000 + b"]" * 3000, 1, "nests deeper than 24 levels, the limit of a document"),
    "control_character": (
        b"name: a\nmatch: {agent: a}\nscorers: [{type: f1,\x0b expected: []}]\n",
        3,
        "not valid YAML/JSON: character #x000b at offset 46 is not allowed",
    ),
}


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_apply_of_a_hostile_file_exits_2_in_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    content, line, told = HOSTILE[case]
    path = tmp_path / "e.json"
    path.write_bytes(content)
    result = CliRunner().invoke(main, ["expectations", "apply", str(path), "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:{line}: {told}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_apply_names_every_unreadable_file_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(f"name: a\nmatch: {{agent: travel}}\n{PICK}\n")
    (tmp_path / "b.json").write_bytes(HOSTILE["not_utf8"][0])
    (tmp_path / "c.json").write_bytes(HOSTILE["3000_deep"][0])
    db = str(tmp_path / "r.db")
    result = CliRunner().invoke(main, ["expectations", "apply", str(tmp_path), "--db", db])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"Error: {tmp_path / 'b.json'}:2: {HOSTILE['not_utf8'][2]}",
        f"{tmp_path / 'c.json'}:1: {HOSTILE['3000_deep'][2]}",
    ]
    assert CliRunner().invoke(main, ["expectations", "list", "--db", db, "-o", "json"]).stdout == "[]\n"


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_reload_logs_the_file_and_keeps_the_previous_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    content, line, told = HOSTILE[case]
    path = tmp_path / "exp.json"
    _write(path, f"name: a\nmatch: {{agent: travel}}\n{PICK}\n".encode())
    with (
        caplog.at_level(logging.WARNING, logger="toolscore.registry"),
        Registry.from_file(path, interval_s=0.05) as registry,
    ):
        _write(path, content)
        assert eventually(lambda: registry.last_error is not None)
        assert names(registry) == ["a"]
        assert registry.get("a").version == 1
    assert f"expectation files not reloaded, the previous set stays: {path}:{line}: <root>: {told}" in caplog.text
    assert "store failed" not in caplog.text
    assert "Traceback" not in caplog.text


def test_a_file_of_nested_yaml_aliases_is_refused_before_anything_expands_them(tmp_path: Path) -> None:
    """Nine levels of nine aliases: 400 bytes that a JSON size check or a validator would expand to 387
    million values."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join([*lines, "name: x", ""]))
    started = time.monotonic()
    with pytest.raises(InvalidExpectation) as caught:
        load_file(path)
    assert time.monotonic() - started < 5
    assert str(caught.value) == f"{path}:1: <root>: holds more than 262144 values, over the limit of a document"


def test_a_repeated_expectations_key_reads_the_last_list_as_yaml_does(tmp_path: Path) -> None:
    """Found by `make fuzz`: the line lookup took the first list and the values the last, and failed."""
    path = tmp_path / "e.yaml"
    first = f"  - name: old\n    match: {{agent: a}}\n    {PICK}\n"
    second = (
        f"  - name: new\n    match: {{agent: a}}\n    {PICK}\n  - name: newer\n    match: {{agent: b}}\n    {PICK}\n"
    )
    path.write_text(f"expectations:\n{first}expectations:\n{second}")
    assert [e.name for e in load_file(path)] == ["new", "newer"]
    path.write_text(f"expectations:\n{first}expectations:\n  - name: new\n    match: {{agent: a}}\n    scorers: []\n")
    with pytest.raises(InvalidExpectation) as caught:
        load_file(path)
    assert caught.value.line == 8  # in the second list (the first ends at line 4)
