"""Expectations from YAML or JSON files (one or many, or directories), with errors that say where.

A file holds one expectation, a list of them, or `{expectations: [...]}`; YAML files may hold several
`---` documents. JSON is read by the YAML parser too, so both report lines. The YAML node tree keeps
every value's position, and a validation error's field path is walked down that tree to the line of
the offending key.

A document's `version` is not read: the store numbers every write itself. It is there because
`toolscore expectations get` prints it, so a file made with `get > f` still applies; the loader says
it ignores it rather than let the user think `apply` checks it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from toolscore.collector.registry._errors import InvalidExpectation, Problem, UnreadableFiles
from toolscore.collector.registry._limits import MAX_DOCUMENT_DEPTH
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._poll import Loop
from toolscore.collector.registry._validation import parse_expectation, warn_if_unmatchable
from toolscore.collector.yaml_lines import line_of as _line

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import PrivacyConfig

__all__ = ["EXTENSIONS", "FileWatcher", "expand_paths", "load_by_file", "load_file", "load_paths"]

EXTENSIONS = (".yaml", ".yml", ".json")

_log = logging.getLogger("toolscore.registry")
_ABSENT = object()
_MAX_FILE_DEPTH = MAX_DOCUMENT_DEPTH + 2
"""A file may wrap its documents in a list, and that in `{expectations: [...]}`."""


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories become their expectation files (recursively, in name order).

    Hidden names are skipped inside directories: a Kubernetes ConfigMap mount keeps a second copy of
    every file in `..<timestamp>/` (behind `..data`), which would load each expectation twice.
    """
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            out.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.suffix in EXTENSIONS
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                    and p.is_file()
                )
            )
        else:
            out.append(path)
    return out


def _items(doc: yaml.Node, data: Any) -> list[tuple[yaml.Node, Any]]:
    """The expectation documents of one YAML document: a mapping, a list, or `{expectations: [...]}`."""
    if isinstance(doc, yaml.MappingNode) and isinstance(data, dict) and set(data) == {"expectations"}:
        # the last such key: YAML loaders keep a repeated key's last value, so that is the list in `data`
        doc = [v for k, v in doc.value if getattr(k, "value", None) == "expectations"][-1]
        data = data["expectations"]
    if isinstance(doc, yaml.SequenceNode) and isinstance(data, list):
        return list(zip(doc.value, data, strict=True))
    return [(doc, data)]


def _text(path: Path) -> str:
    """The file as text; one that cannot be read, or is not UTF-8, is refused naming the line of the bad byte."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidExpectation.single("", f"cannot read: {exc.strerror or exc}", str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason})"
        raise InvalidExpectation.single("", message, str(path), line) from None


def _check_depth(text: str, path: Path) -> None:
    """Refuse nesting deeper than a document may be, from the parser's events (which do not recurse) before
    the node tree is composed (which does: a few thousand levels exhaust Python's stack)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > _MAX_FILE_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else None
                message = f"nests deeper than {MAX_DOCUMENT_DEPTH} levels, the limit of a document"
                raise InvalidExpectation.single("", message, str(path), line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _documents(path: Path) -> list[tuple[yaml.Node, Any]]:
    text = _text(path)
    try:
        _check_depth(text, path)
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        items = []
        for node in nodes:
            if node is None:
                continue
            data = yaml.SafeLoader("").construct_document(node)
            items.extend(_items(node, data) if data is not None else [])
        return items
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise InvalidExpectation.single("", f"not valid YAML/JSON: {exc.problem}", str(path), line) from None
    except yaml.reader.ReaderError as exc:  # a control character: YAML allows none but tab and newlines
        line = text.count("\n", 0, exc.position) + 1
        message = f"not valid YAML/JSON: character #x{exc.character:04x} at offset {exc.position} is not allowed"
        raise InvalidExpectation.single("", message, str(path), line) from None


def load_file(path: str | Path) -> list[Expectation]:
    """Every expectation in one file; raises `InvalidExpectation` listing every problem in it."""
    return load_paths([path])


def load_paths(paths: Iterable[str | Path], *, privacy: PrivacyConfig | None = None) -> list[Expectation]:
    """Every expectation in the files and directories, validated together: names must be unique.

    `privacy`: the settings runs are masked with; an argument rule they make uncheckable is refused.

    Raises `InvalidExpectation` listing every problem, `UnreadableFiles` when a file could not be read at all.
    """
    return [exp for found in load_by_file(paths, privacy=privacy).values() for exp in found]


def load_by_file(paths: Iterable[str | Path], *, privacy: PrivacyConfig | None = None) -> dict[Path, list[Expectation]]:
    """`load_paths`, keeping which file each expectation came from (every file read, in order, even if empty):
    `eval` names the files whose expectations matched no run."""
    out: dict[Path, list[Expectation]] = {}
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    unreadable = False
    for path in expand_paths(paths):
        found = out.setdefault(path, [])
        try:
            documents = _documents(path)
        except InvalidExpectation as exc:
            problems.extend(exc.problems)
            unreadable = True
            continue
        for node, data in documents:
            version = data.pop("version", _ABSENT) if isinstance(data, dict) else _ABSENT
            try:
                locate = functools.partial(_line, node)
                exp = parse_expectation(data, file=str(path), locate=locate, privacy=privacy)
            except InvalidExpectation as exc:
                problems.extend(exc.problems)
                continue
            where = f"{path}:{_line(node, ())}"
            if version is not _ABSENT:
                _log.warning(
                    "expectation %r (%s:%s) sets `version: %s`, which is ignored: files do not set versions, the "
                    "store numbers every write itself (`toolscore expectations get` prints the live one); "
                    "`toolscore expectations apply` writes over whatever version is live",
                    exp.name,
                    path,
                    _line(node, ("version",)),
                    version,
                )
            if exp.name in seen:
                line = _line(node, ("name",))
                problems.append(
                    Problem("name", f"duplicate name {exp.name!r}, first at {seen[exp.name]}", str(path), line)
                )
                continue
            seen[exp.name] = where
            warn_if_unmatchable(exp, where)
            found.append(exp)
    if problems:
        raise (UnreadableFiles if unreadable else InvalidExpectation)(problems)
    return out


class FileWatcher(Loop):
    """Calls `on_change()` when the content of the watched files changes, from a daemon thread.

    It compares content digests, not modification times, so an edit within the file system's time
    resolution is still seen; the files are small and read once per `interval_s`.
    """

    def __init__(
        self,
        paths: Iterable[str | Path],
        on_change: Callable[[], None],
        *,
        interval_s: float = 1.0,
        signature: tuple[tuple[str, str], ...] | None = None,
    ) -> None:
        """`signature`: the content last seen (`signature()`), read now when not given."""
        self._paths = [Path(p) for p in paths]
        self._on_change = on_change
        self._interval_s = interval_s
        self._signature = self.signature() if signature is None else signature
        super().__init__("toolscore-registry-files")

    def renewed(self) -> FileWatcher:
        """The same watch, not started, for a forked child (which has none of the parent's threads): from the
        content this one last saw, so that an edit it had not seen yet is still one."""
        return FileWatcher(self._paths, self._on_change, interval_s=self._interval_s, signature=self._signature)

    def signature(self) -> tuple[tuple[str, str], ...]:
        """(path, sha256) of every file the paths expand to; a missing file hashes as `missing`."""
        out = []
        for path in expand_paths(self._paths):
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                digest = "missing"
            out.append((str(path), digest))
        return tuple(out)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            signature = self.signature()
            if signature == self._signature:
                continue
            self._signature = signature
            try:
                self._on_change()
            except Exception:
                _log.exception("reloading expectation files failed")
