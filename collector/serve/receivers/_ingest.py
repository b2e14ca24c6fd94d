"""The contract between the OTLP receivers and whatever consumes their requests.

Receivers (gRPC and HTTP) only parse, authenticate and answer; `Ingest.accept` decides what happens to
the spans. Its `IngestResult` maps one-to-one onto the OTLP answers: a partial success
(`rejected_spans` + `error_message`), or a whole request refused because the collector is overloaded
(gRPC `RESOURCE_EXHAUSTED` with `RetryInfo`, HTTP 429 with `Retry-After`) so that the sender retries
rather than the spans being lost. `refusal` lets a receiver give that answer before it reads a request
at all: under overload every refused request comes back (OTLP senders retry), and receiving and parsing
each retry only to refuse it cost the collector about a tenth of its CPU on the benchmark's load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from toolscore.collector.sources.log_events import LogBatch

__all__ = ["Ingest", "IngestResult"]


@dataclass(frozen=True)
class IngestResult:
    """What became of one export request; the default value is a full success."""

    rejected_spans: int = 0
    """Spans dropped from an accepted request (e.g. bad ids): OTLP partial success `rejected_spans`; for a logs
    export, the log records not read (`rejected_log_records`)."""
    error_message: str = ""
    """Why spans were rejected: OTLP partial success `error_message`; empty when nothing was rejected."""
    overloaded: bool = False
    """The whole request was refused and none of it kept: answer RESOURCE_EXHAUSTED / HTTP 429 so it is retried."""
    retry_after_s: float = 1.0
    """With `overloaded`: how long the sender should wait before retrying (RetryInfo / Retry-After)."""
    reason: str = ""
    """With `overloaded`: the `toolscore.refusal.reason` it was counted under (`queue_full`, ...), which the
    receivers' log lines name; empty when the ingest does not say."""


class Ingest(Protocol):
    """Consumes OTLP trace export requests, and the GenAI events of logs exports; safe for concurrent use by
    the receivers' threads."""

    def accept(self, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        """Take the request's spans; never blocks for long and never raises (failures are in the result).

        `data`: the serialized request as received, when the receiver has it (binary protobuf), so
        that spans can be forwarded as the sender's bytes rather than serialized again.
        """
        ...

    def accept_bytes(self, data: bytes, max_spans: int) -> IngestResult | None:
        """Take a binary request from its bytes alone, unparsed, when the ingest can (`serve`'s pre-filter walks it:
        a request of no agent trace is held whole, of another only the agent traces' spans are read); None: parse
        it and `accept` it. Never raises. A request it takes holds at most `max_spans` spans and blocks, and
        parses: the answer is the one `accept` would give it."""
        ...

    def accept_logs(self, batch: LogBatch) -> IngestResult:
        """Take the GenAI events of a logs export (decoded by the receiver) to join their spans, and answer for
        the records not read (`batch.refusals`); never blocks for long and never raises."""
        ...

    def refusal(self) -> IngestResult | None:
        """The overloaded answer for a request not read yet, when `accept` would refuse it; None: read it.

        A cheap check (no request in hand): a receiver asks it first and, on an answer, refuses without
        receiving or parsing the body. `accept` still decides for every request that is read.
        """
        ...

    def load(self) -> str:
        """The state of the queues that decide overload, for the log line about an overload refusal
        (`spans queued for scoring 9998/10000, ...`). Asked only when such a line is written, at most every
        few seconds, so it may take locks and format."""
        ...
