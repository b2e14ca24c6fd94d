"""Histograms summed by toolscore itself, on the `MeterProvider` it builds, and handed to its readers.

The SDK's `Histogram.record` cleans, copies, sorts and hashes the attributes of every measurement and
walks its reader storages: 14-22 µs with three attributes on the benchmark machine, for a measurement
that is a bisect and five additions. A scored run records three (its scores and its delay), which
was about a tenth of `toolscore serve`'s worker CPU on the all-agent load. When toolscore builds the
provider (`setup.build_meter_provider`: `toolscore serve`, and `toolscore.instrument()` when the
application set none), its readers are its own too, so those histograms are summed here, per
attribute set, and every collection of every reader gets their points added to what the SDK collected
(`TalliedReader._receive_metrics`, the method each `MetricReader` implements to take a collection).

The points are those of the SDK's explicit-bucket histogram with the same boundaries: count, sum,
min, max and per-bucket counts (a value equal to a boundary in the bucket that boundary closes),
cumulative or delta as the reader's temporality for histograms asks, no exemplars (the provider
keeps none unless `OTEL_METRICS_EXEMPLAR_FILTER` asks, and then it is not tallied: `tally_for`).
On a provider the application gave, the SDK's instruments are used as before.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.sdk.metrics import Histogram as SdkHistogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricReader,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AttributeValue

from toolscore.collector.forks import on_fork
from toolscore.collector.telemetry.metrics_table import MetricSpec

__all__ = ["CARDINALITY_LIMIT", "HistogramTally", "TalliedMeterProvider", "TalliedReader", "tally_for"]

Attributes = tuple[tuple[str, AttributeValue], ...]

CARDINALITY_LIMIT = 2000
"""Attribute sets per histogram and reader before further ones share the overflow point, as the SDK's default."""
_OVERFLOW: Attributes = (("otel.metric.overflow", True),)


class _Point:
    """One attribute set's histogram since its start: the SDK's explicit-bucket aggregation, unlocked
    (the tally's lock guards every point)."""

    __slots__ = ("count", "counts", "max", "min", "start_ns", "sum")

    def __init__(self, buckets: int, start_ns: int) -> None:
        self.counts = [0] * buckets
        self.count = 0
        self.sum = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.start_ns = start_ns

    def add(self, index: int, value: float) -> None:
        self.counts[index] += 1
        self.count += 1
        self.sum += value
        self.min = min(self.min, value)
        self.max = max(self.max, value)


class _Sink:
    """One reader's points: kept from their first measurement (cumulative), or begun afresh at each of
    its collections (delta, each point starting at the collection before)."""

    def __init__(self, delta: bool, start_ns: int) -> None:
        self.delta = delta
        self.points: dict[tuple[str, Attributes], _Point] = {}
        self.sets: dict[str, int] = {}
        """Attribute sets per histogram among `points`, for `CARDINALITY_LIMIT`."""
        self.last_ns = start_ns


class HistogramTally:
    """The tallied histograms of one provider (`specs`), and one sink per reader that reads them."""

    def __init__(self, specs: Sequence[MetricSpec], scope: InstrumentationScope, resource: Resource) -> None:
        self.specs = {spec.name: spec for spec in specs if spec.kind == "histogram" and spec.buckets is not None}
        self.scope = scope
        self.resource = resource
        self._bounds = {name: tuple(float(b) for b in spec.buckets or ()) for name, spec in self.specs.items()}
        self._sinks: list[_Sink] = []
        self._lock = threading.Lock()
        on_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        """A forked child starts with no points, on a lock no thread of the parent can hold."""
        self._lock = threading.Lock()
        for sink in self._sinks:
            sink.points, sink.sets = {}, {}

    def sink(self, delta: bool) -> _Sink:
        """A new reader's sink (before the provider records anything: a reader comes with the provider)."""
        sink = _Sink(delta, time.time_ns())
        with self._lock:
            self._sinks.append(sink)
        return sink

    def record(self, name: str, value: float, attributes: Attributes) -> None:
        """One measurement of histogram `name` (one of `specs`), of a finite non-negative `value`, as the SDK's
        `Histogram.record` takes it (others are left out, as the SDK leaves them out with a warning)."""
        if not 0.0 <= value < math.inf:  # NaN fails both
            return
        bounds = self._bounds[name]
        index = bisect.bisect_left(bounds, value)
        key = (name, attributes)
        with self._lock:
            for sink in self._sinks:
                point = sink.points.get(key)
                if point is None:
                    point = self._new_point(sink, key, len(bounds) + 1)
                point.add(index, value)

    @staticmethod
    def _new_point(sink: _Sink, key: tuple[str, Attributes], buckets: int) -> _Point:
        """The sink's point for a new attribute set, or its overflow point past `CARDINALITY_LIMIT` sets (the
        SDK's rule: the limit's sets, then one more with only `otel.metric.overflow`)."""
        name = key[0]
        if sink.sets.get(name, 0) >= CARDINALITY_LIMIT:
            key = (name, _OVERFLOW)
            point = sink.points.get(key)
            if point is not None:
                return point
        else:
            sink.sets[name] = sink.sets.get(name, 0) + 1
        point = sink.points[key] = _Point(buckets, sink.last_ns if sink.delta else time.time_ns())
        return point

    def collect(self, sink: _Sink, now_ns: int) -> list[Metric]:
        """The sink's points now, as metrics (one per histogram with points); a delta sink starts afresh."""
        with self._lock:
            points = sink.points
            if sink.delta:
                sink.points, sink.sets = {}, {}
                sink.last_ns = now_ns
            else:
                points = dict(points)
            snapshot = [
                (name, attributes, list(p.counts), p.count, p.sum, p.min, p.max, p.start_ns)
                for (name, attributes), p in points.items()
            ]
        temporality = AggregationTemporality.DELTA if sink.delta else AggregationTemporality.CUMULATIVE
        by_name: dict[str, list[HistogramDataPoint]] = {}
        for name, attributes, counts, count, total, low, high, start_ns in snapshot:
            by_name.setdefault(name, []).append(
                HistogramDataPoint(
                    attributes=dict(attributes),
                    start_time_unix_nano=start_ns,
                    time_unix_nano=now_ns,
                    count=count,
                    sum=total,
                    bucket_counts=counts,
                    explicit_bounds=self._bounds[name],
                    min=low,
                    max=high,
                )
            )
        return [
            Metric(
                name=name,
                description=self.specs[name].description,
                unit=self.specs[name].unit,
                data=Histogram(data_points=points_of, aggregation_temporality=temporality),
            )
            for name, points_of in by_name.items()
        ]

    def merged(self, sink: _Sink, data: MetricsData) -> MetricsData:
        """`data` with the sink's points added under the tally's scope (in the first resource's scope metrics,
        or in a resource of the tally's own when `data` has none); `data` itself when there are none."""
        extra = self.collect(sink, time.time_ns())
        if not extra:
            return data
        resources = list(data.resource_metrics)
        for i, resource_metrics in enumerate(resources):
            scopes = list(resource_metrics.scope_metrics)
            for j, scope_metrics in enumerate(scopes):
                if scope_metrics.scope.name == self.scope.name:
                    scopes[j] = replace(scope_metrics, metrics=[*scope_metrics.metrics, *extra])
                    break
            else:
                scopes.append(ScopeMetrics(scope=self.scope, metrics=extra, schema_url=""))
            resources[i] = replace(resource_metrics, scope_metrics=scopes)
            break
        else:
            scope = ScopeMetrics(scope=self.scope, metrics=extra, schema_url="")
            resources.append(ResourceMetrics(resource=self.resource, scope_metrics=[scope], schema_url=""))
        return MetricsData(resource_metrics=resources)


class TalliedReader:
    """Mixed into a `MetricReader` subclass (before it): each collection it takes gets the tally's points.

    `_receive_metrics` is the method every reader implements to take what `MetricReader.collect` collected;
    overriding it adds the points without touching how the reader collects or exports (`collect` itself is
    final). The SDK skips it for a collection with no data at all; the tally's points then go with the next
    one that has some: none is lost (a delta reader's period runs on). Each measurement toolscore tallies
    comes with counters moving in the same or a later collection (a score with `toolscore.evaluations`, a
    delay with `toolscore.runs`, a wait with the counts of the spans its request brought, or with
    `toolscore.receiver.refused`), and a cumulative reader's counters are in every collection once set.
    """

    _tallied: tuple[HistogramTally, _Sink] | None = None
    """The tally this reader reads and its sink in it (`tally_into`), None until then."""

    def tally_into(self, tally: HistogramTally) -> None:
        """Read `tally` too, with this reader's temporality for histograms: what it was given to prefer (the
        periodic reader: its exporter's preference, `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`),
        cumulative when nothing (`tests/test_telemetry_histogram_tally.py` holds both to the SDK's)."""
        preferred: dict[type, AggregationTemporality] | None = getattr(self, "_preferred_temporality", None)
        delta = (preferred or {}).get(SdkHistogram) is AggregationTemporality.DELTA
        self._tallied = (tally, tally.sink(delta))

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        if self._tallied is not None:
            tally, sink = self._tallied
            metrics_data = tally.merged(sink, metrics_data)
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)  # type: ignore[misc]


class TalliedMeterProvider(MeterProvider):
    """The SDK's provider, carrying the tally its readers read (`OTelPipelineTelemetry` records into it)."""

    def __init__(self, tally: HistogramTally, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tally = tally


def tally_for(
    readers: Sequence[MetricReader], specs: Sequence[MetricSpec], scope: InstrumentationScope, resource: Resource
) -> HistogramTally | None:
    """A tally read by every reader of `readers`, or None when one of them cannot read it (not a
    `TalliedReader`): then every histogram stays the SDK's."""
    if not readers or not all(isinstance(reader, TalliedReader) for reader in readers):
        return None
    tally = HistogramTally(specs, scope, resource)
    for reader in readers:
        assert isinstance(reader, TalliedReader)
        reader.tally_into(tally)
    return tally
