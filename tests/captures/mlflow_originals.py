"""The name and MLflow span type of every span as MLflow made it, before its GenAI translation renamed it.

With `MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true` MLflow's `OtelSpanProcessor.on_end` hands each span to
`mlflow.tracing.export.genai_semconv.translator.translate_span_to_genai` (imported from the module at each call),
which renames it (`invoke_agent <name>`, a CHAIN span just `CHAIN`) and drops the `mlflow.*` attributes. A capture
needs the original names to find the spans its truth points at (the runs); `Originals` wraps the translator and
remembers them by span id. It changes nothing that is exported.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any


class Originals:
    def __init__(self) -> None:
        from mlflow.tracing.export.genai_semconv import translator

        self.seen: dict[bytes, tuple[str, str | None]] = {}
        translate = translator.translate_span_to_genai

        def remembering(span: Any) -> Any:
            span_type = (span.attributes or {}).get("mlflow.spanType")
            with contextlib.suppress(ValueError):
                span_type = json.loads(span_type) if isinstance(span_type, str) else span_type
            self.seen[span.context.span_id.to_bytes(8, "big")] = (span.name, span_type)
            return translate(span)

        translator.translate_span_to_genai = remembering  # type: ignore[assignment]

    def clear(self) -> None:
        self.seen.clear()

    def name_and_type(self, span: Any, attr: Callable[[Any, str], Any]) -> tuple[str, str | None]:
        """(name, MLflow span type) of an exported span: as before the translation when it was translated."""
        if span.span_id in self.seen:
            return self.seen[span.span_id]
        span_type = attr(span, "mlflow.spanType")
        return span.name, json.loads(span_type) if isinstance(span_type, str) else span_type
