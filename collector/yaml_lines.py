"""Where a value sits in a YAML document: from a validation error's field location to a file line.

PyYAML's node tree keeps the position of every value; pydantic reports a location as a path of keys
and indexes. Walking the path down the tree gives the line an author should look at, so both
expectation files and the collector's configuration file report `file:line: field: message`.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

__all__ = ["line_of"]


def line_of(node: yaml.Node, loc: Sequence[str | int]) -> int:
    """The 1-based line of the deepest node on `loc` that exists (a key's line for a mapping entry)."""
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if str(getattr(k, "value", "")) == str(part)), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line
