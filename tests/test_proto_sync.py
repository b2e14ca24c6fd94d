"""The checked-in gRPC stubs are exactly what `make proto` generates from the .proto files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def _protos() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def _generate(out: Path) -> None:
    """The same command as the Makefile's `proto` target, with the output sent to `out`."""
    rel = [str(p.relative_to(PROTO_ROOT)) for p in _protos()]
    outputs = [f"--python_out={out}", f"--pyi_out={out}", f"--grpc_python_out={out}"]
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTO_ROOT), *outputs, *rel],
        check=True,
        cwd=PROTO_ROOT,
        capture_output=True,
    )


def _generated_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name.endswith(GENERATED_SUFFIXES)
    }


def test_there_is_a_proto_to_check() -> None:
    assert PROTO_ROOT / "toolscore" / "registry" / "v1" / "registry.proto" in _protos()


@pytest.mark.integration
def test_checked_in_stubs_match_a_fresh_generation(tmp_path: Path) -> None:
    _generate(tmp_path)
    fresh = _generated_files(tmp_path)
    checked_in = _generated_files(PROTO_ROOT)
    assert fresh, "protoc generated nothing"
    assert sorted(checked_in) == sorted(fresh), "stubs missing or left over: run `make proto`"
    stale = [name for name, data in fresh.items() if checked_in[name] != data]
    assert not stale, f"stubs out of date with the .proto files, run `make proto`: {stale}"


@pytest.mark.parametrize("name", ["registry_pb2", "registry_pb2_grpc"])
def test_stubs_import_under_the_package_name(name: str) -> None:
    module = __import__(f"toolscore.registry.v1.{name}", fromlist=[name])
    assert Path(module.__file__ or "").is_relative_to(PROTO_ROOT)


# A declaration a reader of another language needs explained: fields, enum values, RPCs and types.
_DECLARATION = re.compile(
    r"^\s*(?:(?:optional |repeated )?[\w.]+(?:<[\w., ]+>)? \w+ = \d+;|[A-Z_0-9]+ = \d+;|rpc \w+|"
    r"(?:message|service|enum|oneof) \w+)"
)


@pytest.mark.parametrize("proto", _protos(), ids=lambda p: p.name)
def test_every_declaration_has_a_comment(proto: Path) -> None:
    lines = proto.read_text().splitlines()
    uncommented = [
        line.strip()
        for i, line in enumerate(lines)
        if _DECLARATION.match(line) and (i == 0 or not lines[i - 1].strip().startswith("//"))
    ]
    assert not uncommented
    assert sum(bool(_DECLARATION.match(line)) for line in lines) > 50
