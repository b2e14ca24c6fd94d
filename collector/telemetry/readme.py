"""docs/metrics.md's tables, rendered from the metric table and the telemetry config model.

docs/metrics.md holds the rendered text between markers; `tests/test_telemetry_table.py` fails (and prints
the expected block) when they differ, so the documentation cannot drift from what is emitted.
Run ``python -m toolscore.collector.telemetry.readme`` to print both blocks.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from toolscore.collector.telemetry.metrics_table import ATTRIBUTES, CAPPED_NOTE, METRICS, MetricSpec
from toolscore.collector.telemetry.setup import TelemetryConfig

__all__ = [
    "CONFIG_MARKERS",
    "METRICS_MARKERS",
    "render_config",
    "render_metrics",
    "replace_block",
]

METRICS_MARKERS = ("<!-- metrics:start -->", "<!-- metrics:end -->")
CONFIG_MARKERS = ("<!-- telemetry-config:start -->", "<!-- telemetry-config:end -->")

_DEFAULT_SENTENCE = re.compile(r"\s*Default: [^ ]+\.?$")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code_list(items: tuple[str, ...]) -> str:
    return ", ".join(f"`{item}`" for item in items) if items else "none"


def _kind(spec: MetricSpec) -> str:
    if spec.buckets is None:
        return spec.kind.replace("_", " ")
    return f"histogram, buckets {', '.join(f'{b:g}' for b in spec.buckets)}"


def render_metrics() -> str:
    """The metric and attribute tables, as Markdown."""
    lines = [
        "| Metric | Kind | Unit | Attributes | Meaning | Healthy |",
        "|---|---|---|---|---|---|",
    ]
    for spec in METRICS:
        cells = (
            f"`{spec.name}`",
            _kind(spec),
            f"`{spec.unit}`",
            _code_list(spec.attributes),
            spec.description,
            spec.healthy,
        )
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += ["", "| Attribute | Meaning | Values |", "|---|---|---|"]
    for attribute in ATTRIBUTES.values():
        values = attribute.values_note or (CAPPED_NOTE if attribute.values is None else _code_list(attribute.values))
        lines.append(f"| `{attribute.name}` | {_cell(attribute.description)} | {_cell(values)} |")
    return "\n".join(lines)


def _default_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def render_config(model: type[BaseModel] = TelemetryConfig) -> str:
    """One ``key (default = X): meaning`` line per field of `model`."""
    lines = []
    for name, field in model.model_fields.items():
        meaning = _DEFAULT_SENTENCE.sub("", field.description or "")
        lines.append(f"- `{name}` (default = `{_default_text(field.default)}`): {meaning}")
    return "\n".join(lines)


def replace_block(text: str, markers: tuple[str, str], block: str) -> str:
    """`text` with the part between `markers` replaced by `block` (ValueError when a marker is missing)."""
    start, end = markers
    if start not in text or end not in text:
        raise ValueError(f"markers {start!r} ... {end!r} are missing")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{block}\n{end}{tail}"


if __name__ == "__main__":
    print(f"{METRICS_MARKERS[0]}\n{render_metrics()}\n{METRICS_MARKERS[1]}\n")
    print(f"{CONFIG_MARKERS[0]}\n{render_config()}\n{CONFIG_MARKERS[1]}")
