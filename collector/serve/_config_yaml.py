"""`toolscore serve --print-config`: a configuration as YAML that documents itself.

Each key is preceded by its field description as a comment, so the output is both a report of what
the collector will run with and a starting point for a config file. A field without a description
is a kind selector (`type`) and gets the list of kinds instead. Secrets are redacted: this output is
pasted into tickets and chats.
"""

from __future__ import annotations

import re
import textwrap
import typing
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from pydantic import BaseModel

__all__ = ["CONNECTION_STRINGS", "SECRETS", "redact_connection_string", "render_yaml"]

SECRETS = frozenset(
    {
        ("receiver", "bearer_token"),
        ("forward", "headers"),
        ("ui", "bearer_token"),
        ("pipeline", "extract", "privacy", "hash_key"),  # whoever holds it can check a guess against a marker
    }
)
"""Key paths printed as `<redacted>` (every value of a mapping)."""

CONNECTION_STRINGS = frozenset({("registry", "store", "dsn")})
"""Key paths printed with their password (URL user-info, `password=` keyword or query) redacted."""

REDACTED = "<redacted>"

_USERINFO_PASSWORD = re.compile(r"(://[^:/@?#]*:)[^/?#]*(@)")  # to the last @: the host follows it
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)


def redact_connection_string(dsn: str) -> str:
    """A libpq URL or keyword string with its password replaced, the rest kept to recognise it by."""
    dsn = _USERINFO_PASSWORD.sub(rf"\1{REDACTED}\2", dsn)
    return _KEYWORD_PASSWORD.sub(rf"\1{REDACTED}", dsn)


Source = Callable[[Sequence[str]], "str | None"]


def render_yaml(config: BaseModel, *, width: int = 100, source: Source | None = None) -> str:
    """`config` as YAML, each key preceded by its description as a comment (secrets redacted).

    `source` says where a value was set (None: a default); a value set is followed by `# set by ...`, so that
    one unlike the default its description states reads as chosen, and the reader finds where.
    """
    return "\n".join(_render(config, (), 0, width, (), source=source)) + "\n"


def _kinds(annotation: Any) -> tuple[str, ...]:
    """The `type` values of the models in a (possibly annotated) union: `sqlite`, `postgres`, ..."""
    kinds: list[str] = []
    for arg in typing.get_args(annotation) or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel) and "type" in arg.model_fields:
            kinds.append(str(arg.model_fields["type"].default))
        elif typing.get_args(arg):
            kinds.extend(_kinds(arg))
    return tuple(kinds)


def _comment(text: str, pad: str, width: int) -> list[str]:
    return [f"{pad}# {line}" for line in textwrap.wrap(text, max(40, width - len(pad) - 2))]


def _render(
    model: BaseModel, path: tuple[str, ...], indent: int, width: int, kinds: tuple[str, ...], *, source: Source | None
) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        description = info.description
        if not description and name == "type":
            description = "Kind: " + " | ".join(kinds or (str(value),)) + "; each kind has its own keys."
        lines.extend(_comment(description or name, pad, width))
        if isinstance(value, BaseModel):
            lines.append(f"{pad}{name}:")
            lines.extend(_render(value, (*path, name), indent + 1, width, _kinds(info.annotation), source=source))
            continue
        plain = _plain(value)
        if (*path, name) in SECRETS and plain:
            plain = dict.fromkeys(plain, REDACTED) if isinstance(plain, dict) else REDACTED
        elif (*path, name) in CONNECTION_STRINGS and isinstance(plain, str):
            plain = redact_connection_string(plain)
        dumped = yaml.safe_dump({name: plain}, default_flow_style=True, sort_keys=False, width=10_000).strip()
        where = source((*path, name)) if source is not None else None
        lines.append(pad + dumped.removeprefix("{").removesuffix("}") + (f"  # set by {where}" if where else ""))
    return lines


def _plain(value: Any) -> Any:
    """Lists, dicts and scalars YAML can write (tuples as lists, keys as strings)."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
