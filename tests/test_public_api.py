"""The line between public and private: each package exports exactly its documented API, and nothing else.

docs/README.md ("Public and private") lists every package's `__all__`; a name added to or dropped from an
`__init__` fails here until the page says so. In the packages drawn as all-private, every module is
`_`-prefixed; elsewhere a public module exports only names it defines, so that no private name leaks out
through a module a user may import. `toolscore.scorers` never loads `toolscore.collector`, the OTel SDK or grpc
(the judge's spans go through the OTel API only).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import toolscore
import toolscore.collector
import toolscore.scorers

ROOT = Path(__file__).resolve().parent.parent
ALL_PRIVATE = ("toolscore.scorers", "toolscore.collector.serve", "toolscore.collector.registry")
"""Packages whose modules are all internal: their public API is their `__init__`s."""

_ROW = re.compile(r"^\| `(toolscore[\w.]*)` \| (.*) \|$", re.M)


def _documented() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "README.md").read_text()
    section = text.split("## Public and private", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): re.findall(r"\w+", m.group(2)) for m in _ROW.finditer(section)}


def _modules() -> list[str]:
    names = ["toolscore"]
    for package in (toolscore.scorers, toolscore.collector):
        names.append(package.__name__)
        names += [i.name for i in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [n for n in names if not n.endswith("__main__")]


def _packages() -> list[str]:
    return [n for n in _modules() if hasattr(importlib.import_module(n), "__path__")]


def _private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


@pytest.mark.parametrize("package", _packages())
def test_package_exports_exactly_its_documented_api(package: str) -> None:
    documented = _documented()
    assert package in documented, f"docs/README.md lists no public API for {package}"
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(documented[package])


def test_docs_list_no_package_that_does_not_exist() -> None:
    assert set(_documented()) <= set(_packages())


@pytest.mark.parametrize("package", _packages())
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert not name.startswith("_")
        getattr(module, name)


@pytest.mark.parametrize("package", [p for p in _packages() if p.startswith(ALL_PRIVATE)])
def test_the_all_private_packages_bind_nothing_beyond_their_api(package: str) -> None:
    module = importlib.import_module(package)
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if getattr(value, "__module__", "").startswith("toolscore"):
            assert name in module.__all__, f"{package}.{name} is reachable but not in __all__"


@pytest.mark.parametrize("package", ALL_PRIVATE)
def test_modules_of_the_all_private_packages_are_underscored(package: str) -> None:
    public = [
        n
        for n in _modules()
        if n.startswith(package + ".") and not _private(n) and not hasattr(importlib.import_module(n), "__path__")
    ]
    assert public == []


def test_public_modules_export_only_what_they_define() -> None:
    leaks = []
    for name in _modules():
        module = importlib.import_module(name)
        if _private(name) or hasattr(module, "__path__"):
            continue
        for export in getattr(module, "__all__", []):
            home = getattr(getattr(module, export), "__module__", name)
            if home != name and home.startswith("toolscore"):
                leaks.append(f"{name}.{export} (from {home})")
    assert leaks == []


@pytest.mark.integration
def test_scorers_import_nothing_from_the_collector() -> None:
    for file in (ROOT / "scorers").rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("toolscore.collector"), file.name
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("toolscore.collector") for a in node.names), file.name
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, toolscore.scorers; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert [m for m in loaded if m.startswith(("toolscore.collector", "opentelemetry.sdk", "grpc"))] == []


@pytest.mark.integration
def test_importing_the_score_reader_does_not_load_the_receivers() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, toolscore.collector.serve.scores; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert "toolscore.collector.serve.receivers" not in loaded
    assert "grpc" not in loaded
