"""The README's examples run, and print what the README says they print."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from toolscore.collector.registry import PostgresStoreConfig
from toolscore.collector.registry.service import RegistryServerConfig

README = (Path(__file__).parent.parent / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_score_console_examples_print_what_they_show() -> None:
    examples = [b for b in _blocks("console") if "| toolscore score" in b]
    assert examples
    for block in examples:
        command, *shown = block.strip().splitlines()
        request = re.fullmatch(r"\$ echo '(.*)' \| toolscore score", command)
        assert request is not None, command
        proc = subprocess.run(
            [sys.executable, "-m", "toolscore.collector.cli", "score"],
            input=request.group(1),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert [json.loads(line) for line in proc.stdout.splitlines()] == [json.loads(line) for line in shown]


def test_python_examples_print_the_commented_values() -> None:
    examples = [b for b in _blocks("python") if "print(" in b and "# " in b]
    assert examples
    for block in examples:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})
        claimed = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# ([^:\s]+)", block)]
        assert out.getvalue().split() == claimed


def test_extract_console_examples_print_what_they_show() -> None:
    examples = [b for b in _blocks("console") if b.startswith("$ toolscore extract")]
    assert examples
    root = Path(__file__).parent.parent
    for block in examples:
        command, *shown = block.strip().splitlines()
        args = command.removeprefix("$ toolscore extract").split()
        proc = subprocess.run(
            [sys.executable, "-m", "toolscore.collector.cli", "extract", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            cwd=root,
        )
        assert proc.returncode == 0, proc.stderr
        assert [json.loads(line) for line in proc.stdout.splitlines()] == [json.loads(line) for line in shown]


def test_readme_shows_the_default_serve_configuration() -> None:
    shown = re.search(r"<!-- serve-config:start -->\n```yaml\n(.*?)```\n<!-- serve-config:end -->", README, re.S)
    assert shown is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "serve", "--print-config"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parent.parent,
        env=env,
    )
    assert proc.stdout == shown.group(1), "regenerate the block with `toolscore serve --print-config`"


@pytest.mark.parametrize("model", [RegistryServerConfig, PostgresStoreConfig])
def test_readme_names_every_key_the_default_configuration_does_not_show(model: type[BaseModel]) -> None:
    """The registry server's keys, and PostgreSQL's (the default store is SQLite), are documented in prose."""
    missing = [name for name in model.model_fields if name != "type" and f"`{name}`" not in README]
    assert missing == [], f"{model.__name__}: document these keys in the README"
