"""The distribution users install: every package present, all under `toolscore.`, nothing bare."""

from __future__ import annotations

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


def test_wheel_holds_only_namespaced_modules(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("toolscore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"toolscore", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for package in _declared_packages():
        assert "/".join(package.split(".")) + "/__init__.py" in names
    assert "toolscore/scorers/py.typed" in names
    assert "toolscore/registry/v1/registry.proto" in names
