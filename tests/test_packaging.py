"""The distribution users install: every package present, all under `toolscore.`, nothing bare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parent.parent
PACKAGE_DIRS = {"toolscore": "proto/toolscore", "toolscore.scorers": "scorers", "toolscore.collector": "collector"}


def _declared_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def _package_dirs_on_disk() -> set[str]:
    found = set()
    for name, directory in PACKAGE_DIRS.items():
        base = ROOT / directory
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]))
    return found


def test_every_package_directory_is_declared() -> None:
    assert _package_dirs_on_disk() == _declared_packages()


def _wheel(tmp_path: Path, env: dict[str, str] | None = None, root: Path = ROOT) -> list[str]:
    """The names in the wheel pip builds from the checkout."""
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path)]
    subprocess.run([*command, str(root)], check=True, capture_output=True, timeout=300, env=env)
    (wheel,) = tmp_path.glob("toolscore-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def _compiled(names: list[str]) -> list[str]:
    return sorted(n.split(".")[0] for n in names if n.endswith(".so"))


def test_wheel_holds_only_namespaced_modules(tmp_path: Path) -> None:
    names = _wheel(tmp_path)
    wheel = next(tmp_path.glob("toolscore-*.whl"))
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"toolscore", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for package in _declared_packages():
        assert "/".join(package.split(".")) + "/__init__.py" in names
    assert "toolscore/scorers/py.typed" in names
    assert "toolscore/registry/v1/registry.proto" in names
    # the compiled span decoder, span gate and JSON equality, each with its stub for type checkers
    compiled = ["toolscore/collector/pipeline/_gate", "toolscore/collector/sources/_wire", "toolscore/scorers/_equal"]
    assert _compiled(names) == compiled
    for module in compiled:
        assert module + ".pyi" in names


def test_a_machine_without_a_c_compiler_still_builds_the_wheel(tmp_path: Path) -> None:
    """setup.py marks the extension optional: no compiler, no compiled decoder, the pure-Python path decodes."""
    source = tmp_path / "source"  # the checkout without what its own install built (the module, build/)
    skip = shutil.ignore_patterns(".*", "build", "*.so", "*.egg-info", "__pycache__", "node_modules", "tests")
    shutil.copytree(ROOT, source, ignore=skip)
    names = _wheel(tmp_path, env={**os.environ, "CC": "/bin/false", "LDSHARED": "/bin/false"}, root=source)
    assert _compiled(names) == []
    assert "toolscore/collector/sources/_accel.py" in names
    assert "toolscore/collector/pipeline/span_gate.py" in names
    assert "toolscore/scorers/_accel.py" in names
