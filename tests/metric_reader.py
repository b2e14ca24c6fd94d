"""The real OTel telemetry on an in-memory metric reader, read back as plain numbers for assertions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from toolscore.collector.telemetry.otel import OTelPipelineTelemetry


@dataclass
class Meters:
    """`telemetry` reports into `reader`; `points` and `by` read what it holds now."""

    reader: InMemoryMetricReader
    telemetry: OTelPipelineTelemetry

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, value) of every data point of metric `name`, [] when it has none."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [(dict(p.attributes or {}), p.value) for p in metric.data.data_points]  # type: ignore[union-attr]
        return found

    def histogram(self, name: str, attribute: str) -> dict[str, tuple[int, float]]:
        """Histogram `name`'s (count, sum) by the value of `attribute`."""
        found: dict[str, tuple[int, float]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            found[str(dict(point.attributes or {})[attribute])] = (point.count, point.sum)  # type: ignore[union-attr]
        return found

    def by(self, name: str, attribute: str, **where: str) -> dict[str, int]:
        """Counter `name` summed by `attribute`, over the points whose attributes include `where`."""
        sums: dict[str, int] = {}
        for attributes, value in self.points(name):
            if all(attributes.get(k) == v for k, v in where.items()) and attribute in attributes:
                sums[attributes[attribute]] = sums.get(attributes[attribute], 0) + int(value)
        return sums

    def refused(self) -> dict[str, int]:
        """`toolscore.receiver.refused` by reason."""
        return self.by("toolscore.receiver.refused", "toolscore.refusal.reason")

    def refused_spans(self) -> dict[str, int]:
        """`toolscore.spans{toolscore.span.outcome="refused"}` by reason."""
        return self.by("toolscore.spans", "toolscore.refusal.reason", **{"toolscore.span.outcome": "refused"})


@contextmanager
def meters() -> Iterator[Meters]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    try:
        yield Meters(reader, OTelPipelineTelemetry(meter_provider=provider))
    finally:
        provider.shutdown()
