"""The documentation holds together: every relative link leads to a file (and heading) that exists, and the
README stays a front door, not a manual."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_text import README, ROOT, doc_files

README_MAX_LINES = 250
"""The README introduces and links; reference text belongs under docs/."""

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")


def _links(path: Path) -> list[str]:
    """The targets of the Markdown links in `path`'s prose (code blocks and code spans left out)."""
    text = _CODE.sub("", _FENCE.sub("", path.read_text(encoding="utf-8")))
    return _LINK.findall(text)


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives `path`'s headings: lower case, punctuation dropped, spaces as `-`, repeats numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", path.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(path: Path) -> None:
    broken = []
    for target in filter(_relative, _links(path)):
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT) if linked.is_relative_to(ROOT) else linked}")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with anchor #{anchor} in {linked.relative_to(ROOT)}")
    assert broken == []


def test_the_readme_links_every_reference_page() -> None:
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in _links(README) if _relative(target)}
    pages = set(doc_files()) - {README}
    assert sorted(p.name for p in pages - linked) == []


def test_the_readme_stays_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move reference text to docs/"


def test_the_anchor_rule_matches_githubs_for_code_and_punctuation() -> None:
    page = ROOT / "docs" / "expectations.md"
    assert "the-registry-api-grpc-and-toolscore-expectations" in _anchors(page)


FIRST_SCREEN_LINES = 40
"""What a reader sees of the README before scrolling."""


def test_the_readmes_first_screen_installs_with_pip_runs_the_demo_and_attaches_in_process() -> None:
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN_LINES])
    commands = re.search(r"```sh\n(.*?)```", first_screen, re.S)
    assert commands is not None
    steps = [line.split("#")[0].strip() for line in commands.group(1).splitlines()]
    assert steps[:3] == ["pip install -e .", "toolscore serve", "toolscore demo"]
    attach = re.search(r"```python\n(.*?)```", first_screen, re.S)
    assert attach is not None
    assert "toolscore.instrument(" in attach.group(1)


@pytest.mark.integration
def test_the_readmes_in_process_snippet_runs_as_written() -> None:
    """Run where a reader runs it, from the clone, in a fresh interpreter."""
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN_LINES])
    attach = re.search(r"```python\n(.*?)```", first_screen, re.S)
    assert attach is not None
    proc = subprocess.run(
        [sys.executable, "-c", attach.group(1)], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stderr
