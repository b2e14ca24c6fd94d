"""The documentation a reader sees: README.md, the front door, and the reference pages under docs/.

Tests that check what the documentation says (its examples run, its generated blocks are current, its
links lead somewhere) read it through here, so that text moved from one page to another stays checked.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DOCS", "README", "ROOT", "all_text", "blocks", "doc_files", "page"]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """README.md, then every page under docs/, in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page(name: str) -> str:
    """The text of one page under docs/ (`serve.md`)."""
    return (DOCS / name).read_text(encoding="utf-8")


def all_text() -> str:
    """Every page, one after the other; a blank line between two pages, so no paragraph spans both."""
    return "\n\n".join(path.read_text(encoding="utf-8") for path in doc_files())


def blocks(lang: str) -> list[tuple[Path, str]]:
    """Every fenced block of `lang` (```console, ```python, ...), with the page that holds it."""
    found = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        found += [(path, block) for block in re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)]
    return found
