"""The documentation's examples run and print what it says they print, and its configuration keys are the real ones.

The documentation is README.md and the pages under docs/ (`tests.docs_text`), wherever an example moves.
"""

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
import yaml
from pydantic import BaseModel

from tests.docs_text import ROOT, all_text, blocks, page
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.registry import PostgresStoreConfig
from toolscore.collector.registry._files import load_file
from toolscore.collector.registry.api import RegistryServerConfig
from toolscore.scorers import parse_scorer

TEXT = all_text()


def _blocks(lang: str) -> list[str]:
    return [block for _, block in blocks(lang)]


@pytest.mark.integration
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
    examples = [(path, b) for path, b in blocks("python") if "print(" in b and "# " in b]
    assert examples
    for path, block in examples:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(path.relative_to(ROOT)), "exec"), {})
        claimed = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# ([^:\s]+)", block)]
        assert out.getvalue().split() == claimed


@pytest.mark.integration
def test_extract_console_examples_print_what_they_show() -> None:
    examples = [b for b in _blocks("console") if b.startswith("$ toolscore extract")]
    assert examples
    root = ROOT
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


@pytest.mark.integration
def test_docs_show_the_default_serve_configuration() -> None:
    block = r"<!-- serve-config:start -->\n```yaml\n(.*?)```\n<!-- serve-config:end -->"
    shown = re.search(block, page("serve.md"), re.S)
    assert shown is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "serve", "--print-config"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout == shown.group(1), "regenerate the block in docs/serve.md with `toolscore serve --print-config`"


@pytest.mark.parametrize("model", [RegistryServerConfig, PostgresStoreConfig])
def test_docs_name_every_key_the_default_configuration_does_not_show(model: type[BaseModel]) -> None:
    """The registry server's keys, and PostgreSQL's (the default store is SQLite), are documented in prose."""
    missing = [name for name in model.model_fields if name != "type" and f"`{name}`" not in TEXT]
    assert missing == [], f"{model.__name__}: document these keys in docs/"


_DOCUMENTED = re.compile(r"`([\w.]+)`\s+\(default\s+=\s+(`[^`]+`|[^)]+)\)")
"""A key written as the documentation writes them in prose: `` `settle_ms` (default = 250) ``."""


def _paragraph(opening: str) -> str:
    """The documentation's text from `opening` to the next blank line."""
    start = TEXT.index(opening)
    end = TEXT.find("\n\n", start)
    return TEXT[start : end if end != -1 else None]


def _documented(text: str) -> dict[str, str]:
    """Each key `text` documents, with its default as written."""
    return {name: default.strip("`") for name, default in _DOCUMENTED.findall(text)}


def _same_default(written: str, default: object) -> bool:
    """`250` for 250.0, `true` for True, `[a, b]` for a tuple, `ExtractConfig()` for a nested model's defaults."""
    if isinstance(default, BaseModel):
        return written == f"{type(default).__name__}()"
    value = yaml.safe_load(written)
    return bool(value == default or (isinstance(default, tuple) and value == list(default)))


def _wrong_defaults(written: dict[str, str], defaults: dict[str, object]) -> dict[str, tuple[str, object]]:
    """The keys whose default the documentation writes (first) other than the model's (second)."""
    return {name: (written[name], value) for name, value in defaults.items() if not _same_default(written[name], value)}


def _model_defaults(model: type[BaseModel]) -> dict[str, object]:
    return {name: field.get_default(call_default_factory=True) for name, field in model.model_fields.items()}


def test_docs_list_every_in_process_pipeline_key_with_its_default() -> None:
    """The hand-written `PipelineConfig` list: every key, none that is not one, each with its default. A nested
    section is listed key by key (`judge.timeout_s`), or whole (`extract`) with its keys where its class is named."""
    listed = _documented(_paragraph("`PipelineConfig` (`toolscore.collector.PipelineConfig`):\n"))
    expected: dict[str, object] = {}
    for name, default in _model_defaults(PipelineConfig).items():
        if isinstance(default, BaseModel) and name not in listed:
            expected |= {f"{name}.{key}": value for key, value in _model_defaults(type(default)).items()}
        else:
            expected[name] = default
    assert sorted(listed) == sorted(expected)
    assert _wrong_defaults(listed, expected) == {}
    for default in expected.values():
        if isinstance(default, BaseModel):  # listed whole: its own keys are documented where its class is named
            model = type(default)
            keys = _documented(_paragraph(f"`{model.__name__}`"))
            assert sorted(keys) == sorted(model.model_fields), model.__name__
            assert _wrong_defaults(keys, _model_defaults(model)) == {}, model.__name__


def _expectation_examples() -> list[tuple[str, str]]:
    """YAML blocks that are expectation files (a list of them, or `expectations:`), but for excerpts (`...`)."""
    found = []
    for path, block in blocks("yaml"):
        data = yaml.safe_load(block) if "\n    ...\n" not in block else None
        items = data.get("expectations") if isinstance(data, dict) else data
        if isinstance(items, list) and items and all(isinstance(i, dict) and "scorers" in i for i in items):
            found.append((str(path.relative_to(ROOT)), block))
    return found


def test_expectation_examples_load_as_expectation_files(tmp_path: Path) -> None:
    examples = _expectation_examples()
    assert {page for page, _ in examples} >= {"README.md", "docs/expectations.md"}
    for number, (page_name, block) in enumerate(examples):
        file = tmp_path / f"{number}.yaml"
        file.write_text(block)
        assert load_file(file), page_name


def test_scorer_examples_build_scorers() -> None:
    """A YAML list of scorer specs (`- type: trajectory ...`) is what an expectation's `scorers` holds."""
    examples = [yaml.safe_load(b) for _, b in blocks("yaml") if b.startswith("- type: ")]
    assert examples
    for specs in examples:
        assert [parse_scorer(spec).type for spec in specs] == [spec["type"] for spec in specs]


def test_eval_console_example_is_the_golden_summary() -> None:
    """docs/ci.md shows `toolscore eval`'s summary as tests/test_eval_reports.py pins it (the golden file), but for
    the lines it elides (`...`): regenerating the golden file means updating the page."""
    examples = [b for _, b in blocks("console") if b.startswith("$ toolscore eval")]
    assert examples
    golden = (ROOT / "tests" / "testdata" / "eval" / "golden" / "fail_summary.txt").read_text(encoding="utf-8")
    remaining = iter(line.rstrip() for line in golden.splitlines())
    for block in examples:
        shown = [line.rstrip() for line in block.strip().splitlines()[1:] if "..." not in line]
        missing = [line for line in shown if not any(line == g for g in remaining)]
        assert missing == [], "docs/ci.md's eval example differs from tests/testdata/eval/golden/fail_summary.txt"


@pytest.mark.integration
def test_file_exporter_recipe_writes_traces_eval_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The three lines the README's CI section and docs/ci.md show, run on a provider, then `toolscore eval`."""
    from opentelemetry.sdk.trace import TracerProvider

    recipes = {block for _, block in blocks("python") if "OTLPFileSpanExporter(" in block}
    assert len(recipes) == 1, "the README and docs/ci.md show the same recipe"
    (recipe,) = recipes
    assert len(recipe.strip().splitlines()) == 3
    monkeypatch.chdir(tmp_path)
    provider = TracerProvider()
    exec(compile(recipe, "README.md", "exec"), {"provider": provider})
    tracer = provider.get_tracer("app")
    run = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=run):
        tracer.start_span("execute_tool get_weather", attributes=tool).end()
    provider.shutdown()
    (tmp_path / "expectations.yaml").write_text(
        "name: weather\nmatch: {agent: weather}\nscorers:\n  - {type: tool_selection, expected_tool: get_weather}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "eval", "-t", "traces/", "-e", "expectations.yaml"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("toolscore eval: 1 trace file(s), 2 spans, 1 runs;"), proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("PASS: "), proc.stdout
