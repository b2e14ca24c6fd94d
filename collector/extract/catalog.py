"""The run's tool catalog: the tools the model was offered, with name, description and JSON schema.

Rules:

- **Sources.** The run span, then the run's model spans in start order, each read by its convention
  (`Extractor.read_tools`, asked only about spans that carry one of its `Extractor.tool_keys`). Then, for
  each tool the run called that they do not define, the first tool span of that tool, for what it records
  of itself (OpenInference `tool.description` and `tool.parameters` when that is a JSON schema, GenAI
  `gen_ai.tool.description`), under the name the call has.
- **Shapes.** A convention hands over raw definitions, each a mapping or its JSON text: OTel GenAI
  `{"type": "function", "name", "description", "parameters"}` (Vercel writes `inputSchema`, Anthropic
  `input_schema`, pydantic-ai's request parameters `parameters_json_schema`), or the OpenAI nesting
  `{"type": "function", "function": {...}}`; names-only lists become `{"name": ...}`. Parameters may be a
  JSON object or its text (OpenLLMetry).
- **Union.** By name, in first-seen order: a later definition of a name already in the catalog is ignored,
  but for a name known only by name (smolagents' and Strands' name lists), which takes the first later
  definition that says more, in its place. Tool spans are read for such names too.
- **Malformed** definitions (text that is not JSON, not an object, no non-empty string name, a description
  that is not a string, parameters that are not an object) are skipped and counted
  (`ExtractStats.skipped["tool_definition_malformed"]`); a convention that fails to read a span counts
  `read_error:<convention>` as for any other read. Nothing raises.
- **Bounds** (`ExtractConfig.max_attribute_bytes`, UTF-8 bytes of name, description and compact JSON of
  the parameters): a description is cut to the bound and parameters over it are left out; the whole
  catalog stays within the bound too, a definition that would pass it losing its parameters, then its
  description, and, once not even a name fits, the definitions left are left out. Each definition cut
  or left out counts once in `ExtractStats.tool_specs_cut`. Definition texts longer than
  `conventions.common.MAX_DEFINITIONS_CHARS` are not decoded at all (counted as cut): the cap bounds the work too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from toolscore.collector.extract.config import ExtractStats
from toolscore.collector.extract.conventions.common import MAX_DEFINITIONS_CHARS, load_json
from toolscore.collector.extract.order import PendingCall
from toolscore.collector.extract.values import cap_text
from toolscore.collector.spans import SpanRecord
from toolscore.scorers._model import ToolCall, ToolSpec

__all__ = ["Catalog", "defines_tools", "definition_fields", "run_tools", "schema_of"]

_PARAMETER_KEYS = ("parameters", "inputSchema", "input_schema", "parameters_json_schema")
_MALFORMED = "tool_definition_malformed"
_SPECS: dict[tuple[str, str | None], ToolSpec] = {}
"""Specs without parameters by (name, description), shared between runs; cleared when it reaches `_MAX_CACHED`."""
_MAX_CACHED = 4096
_MAX_CACHED_TEXT = 1024
_NAME_ONLY: tuple[None, None] = (None, None)
"""The fields of a tool known by name only (one shared tuple, told apart by identity)."""


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if len(value) > MAX_DEFINITIONS_CHARS:
        raise OverflowError("tool definition too long to decode")
    decoded = load_json(value)
    if decoded is None:
        raise ValueError("not JSON")
    return decoded


def definition_fields(entry: Any) -> tuple[str, str | None, dict[str, Any] | None]:
    """Name, description and parameters of one raw definition; `ValueError` when malformed, `OverflowError`
    when too long to decode."""
    entry = _decoded(entry)
    if not isinstance(entry, Mapping):
        raise ValueError("not a tool definition")
    function = entry.get("function")
    if isinstance(function, Mapping):
        entry = function
    name, description = entry.get("name"), entry.get("description")
    if not (isinstance(name, str) and name) or not (description is None or isinstance(description, str)):
        raise ValueError("not a tool definition")
    parameters = next((entry[key] for key in _PARAMETER_KEYS if entry.get(key) is not None), None)
    parameters = _decoded(parameters)
    if not (parameters is None or isinstance(parameters, Mapping)):
        raise ValueError("not a tool definition")
    return name, description, None if parameters is None else dict(parameters)


class Catalog:
    """The tools of one run, built by `add` in the order of the rules; `specs()` gives the `ToolSpec`s."""

    def __init__(self, max_bytes: int, stats: ExtractStats) -> None:
        self.max_bytes, self.stats = max_bytes, stats
        self.fields: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
        self.used = 0
        self.full = False

    def defines(self, name: str) -> bool:
        """Whether `name` is in the catalog with more than its name."""
        return self.fields.get(name, _NAME_ONLY) is not _NAME_ONLY

    def add_all(self, entries: Iterable[Any], name: str | None = None) -> None:
        """Each raw definition of `entries` (`name`: under that name, whatever it says: a tool span's own)."""
        for entry in entries:
            try:
                found, description, parameters = definition_fields(
                    {**entry, "name": name} if name is not None and isinstance(entry, Mapping) else entry
                )
            except ValueError:
                self.stats.skip(_MALFORMED)
                continue
            except OverflowError:
                self.stats.tool_specs_cut += 1
                continue
            self.add(found, description, parameters)

    def add(self, name: str, description: str | None, parameters: dict[str, Any] | None) -> None:
        """One definition, unless its name is in already; cut to the bounds (see the module docstring)."""
        known = self.fields.get(name)
        if known is not None:
            if known is not _NAME_ONLY or (description is None and parameters is None):
                return
            self.used -= _size(name)  # known by name only: this definition takes its place
        elif self.full:
            self.stats.tool_specs_cut += 1
            return
        left = self.max_bytes - self.used
        name_size = len(name) if name.isascii() else _size(name)
        if name_size > left:
            self.full = True
            self.stats.tool_specs_cut += 1
            return
        room, cut, params_size, description_size = left - name_size, False, 0, 0
        if parameters is not None:
            params_size = _json_size(parameters)
            if params_size > room:
                parameters, params_size, cut = None, 0, True
            room -= params_size
        if description is not None:
            if len(description) * 4 > room:  # may not fit: measured and cut (`cap_text` encodes only what it keeps)
                description, description_cut = cap_text(description, room)
                if description_cut:
                    cut, description = True, description or None
            if description is not None:
                description_size = len(description) if description.isascii() else _size(description)
        self.used += name_size + params_size + description_size
        self.stats.tool_specs_cut += cut
        self.fields[name] = _NAME_ONLY if description is None and parameters is None else (description, parameters)

    def specs(self) -> tuple[ToolSpec, ...]:
        found = _SPECS.get  # shared parameter-less specs, looked up inline: one per tool of every run
        return tuple(
            [
                (found((name, d)) or _spec(name, d, p)) if p is None else _spec(name, d, p)
                for name, (d, p) in self.fields.items()
            ]
        )


def _spec(name: str, description: str | None, parameters: dict[str, Any] | None) -> ToolSpec:
    """The `ToolSpec`, shared between runs when it has no parameters (frozen: one per agent's tool, not per run)."""
    if parameters is not None or (description is not None and len(description) > _MAX_CACHED_TEXT):
        return ToolSpec.trusted(name, description, parameters)
    key = (name, description)
    spec = _SPECS.get(key)
    if spec is None:
        if len(_SPECS) >= _MAX_CACHED:
            _SPECS.clear()
        spec = _SPECS[key] = ToolSpec.trusted(name, description, None)
    return spec


def _json_size(parameters: dict[str, Any]) -> int:
    """UTF-8 bytes of the compact JSON of `parameters`; past any bound when it cannot be encoded."""
    try:
        return _size(json.dumps(parameters, separators=(",", ":"), default=str))
    except (RecursionError, ValueError):  # nested past the encoder, or a loop: not a schema to keep
        return 1 << 62


def schema_of(value: Any) -> dict[str, Any] | None:
    """A tool span's own `schema` when it is a JSON schema object (OpenInference's `tool.parameters` held the
    arguments in older emitters), else None."""
    if isinstance(value, str):
        if len(value) > MAX_DEFINITIONS_CHARS:
            return None
        value = load_json(value)
    if isinstance(value, Mapping) and ("properties" in value or value.get("type") == "object"):
        return dict(value)
    return None


def _size(text: str) -> int:
    """UTF-8 bytes of `text`, encoding only when its length cannot tell (as `cap_text`)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _Node(Protocol):
    """A classified span (`runs.ClassifiedSpan`), as far as the catalog reads it."""

    span: SpanRecord
    extractor: Any
    role: Any


def defines_tools(node: _Node) -> bool:
    """Whether the span carries one of its convention's `tool_keys` (checked before any read)."""
    keys = getattr(node.extractor, "tool_keys", None)
    if keys is None:
        return False
    attrs = node.span.attributes
    for key in keys:  # noqa: SIM110 - a loop over one or two keys, not a generator, per span
        if key in attrs:
            return True
    return False


def _read(catalog: Catalog, node: _Node, name: str | None) -> None:
    """`node`'s definitions into `catalog`; a convention that fails costs this span's definitions only."""
    try:
        entries = node.extractor.read_tools(node.span, node.role)
    except OverflowError:
        catalog.stats.tool_specs_cut += 1
        return
    except ValueError:
        catalog.stats.skip(_MALFORMED)
        return
    except Exception:
        catalog.stats.read_failed(node.span, node.extractor.name)
        return
    catalog.add_all(entries, name)


def run_tools(
    run: _Node,
    models: Sequence[_Node],
    calls: Iterable[tuple[ToolCall, PendingCall]],
    *,
    max_bytes: int,
    stats: ExtractStats,
) -> tuple[ToolSpec, ...]:
    """The run's catalog (see the module docstring): `run` span, `models` it owns, its built `calls` each with
    the pending call it was built from (its tool span's read). Spans without a tool key cost a key lookup or
    two and are not read."""
    offered = [node for node in models if defines_tools(node)] if models else []
    if len(offered) > 1:
        offered.sort(key=lambda node: (node.span.start_ns, node.span.span_id))
    if defines_tools(run):
        offered.insert(0, run)
    elif not offered:
        calls = calls if isinstance(calls, list) else list(calls)
        described = _described(calls, max_bytes)
        if described is not None:
            return described
    catalog = Catalog(max_bytes, stats)
    for node in offered:
        _read(catalog, node, None)
    fields, tried = catalog.fields, set()
    for call, pending in calls:  # the tool spans' own definitions, for the tools the catalog lacks
        read = pending.read
        description, schema = read.description, read.schema
        if (description is None and schema is None) or call.model_only:
            continue
        name = call.name
        if name in tried or fields.get(name, _NAME_ONLY) is not _NAME_ONLY:  # tried, or defined with more than a name
            continue
        tried.add(name)
        if not (description is None or description.__class__ is str or isinstance(description, str)):
            stats.skip(_MALFORMED)
            continue
        parameters = None if schema is None else schema_of(schema)
        if description is not None or parameters is not None:
            catalog.add(name, description, parameters)
    return catalog.specs() if fields else ()


def _described(calls: list[tuple[ToolCall, PendingCall]], max_bytes: int) -> tuple[ToolSpec, ...] | None:
    """The catalog `run_tools` builds when no span offered definitions and the tool spans describe their tools
    by description alone, all within `max_bytes` uncut; None when any of that does not hold (`run_tools` then
    builds it by the rules). The common case (GenAI `gen_ai.tool.description`), without a `Catalog`: the
    same specs in the same order, and nothing to count, since nothing is cut or malformed."""
    found = _SPECS.get
    names: set[str] = set()
    specs: list[ToolSpec] = []
    bound = 0  # characters: at most 4 bytes each, so under max_bytes / 4 nothing is cut
    for call, pending in calls:
        read = pending.read
        if read.schema is not None:
            return None
        description = read.description
        if description is None or call.model_only:
            continue
        name = call.name
        if name in names:
            continue
        if description.__class__ is not str:
            return None
        bound += len(name) + len(description)
        if bound * 4 > max_bytes:
            return None
        names.add(name)
        specs.append(found((name, description)) or _spec(name, description, None))
    return tuple(specs)
