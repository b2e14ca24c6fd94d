"""Each judge request as a GenAI `chat` client span, so a judge that scores oddly can be debugged from a trace.

The span follows the OpenTelemetry GenAI semantic conventions for a model call (`chat {model}`, kind CLIENT,
`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.*`, `gen_ai.response.*`, `gen_ai.usage.*`,
`error.type`), one span per attempt. It starts a trace of its own, linked to the judged run's span: a child
of the run would make the judge's request part of the agent's trace (a model span of the run, read back as
one by anything that rebuilds runs from that trace). What litellm says the request cost, in US dollars, is
`toolscore.judge.cost_usd` (no GenAI attribute exists for it); litellm prices a model it knows and gives
nothing for one it does not (no attribute then).

Message content (`gen_ai.input.messages`, `gen_ai.output.messages`) is recorded only when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is true, as the GenAI instrumentations do: the prompt
holds the run's request and arguments. The variable is read per request, so it can be turned on while a
process runs.

Only the OpenTelemetry API is used: the tracer is the caller's (the pipeline passes one from the provider it
exports through), or the global provider's, a no-op until an application sets one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from toolscore.scorers._model import AgentRun

__all__ = ["CAPTURE_CONTENT_ENV", "COST_ATTRIBUTE", "JUDGE_SCOPE", "judge_span", "record_failure", "record_response"]

JUDGE_SCOPE = "toolscore.judge"
"""The instrumentation scope of judge spans: toolscore's span processor passes them on without reading them."""
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
COST_ATTRIBUTE = "toolscore.judge.cost_usd"
_NO_PARENT = Context()
"""An empty context: the span starts a trace of its own, whatever span is current where the judge runs."""


def _capture_content() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def _run_link(run: AgentRun) -> list[Link]:
    """A link to the run's span, when the run names one (a run built by hand may not)."""
    try:
        trace_id, span_id = int(run.trace_id, 16), int(run.span_id, 16)
    except (TypeError, ValueError):
        return []
    if not (trace_id and span_id):
        return []
    context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return [Link(context, {"toolscore.link": "judged_run"})]


def _provider_and_model(model: str) -> tuple[str, str]:
    """litellm's `provider/model` string split as the conventions name the two; no provider: `openai`, as litellm
    routes a bare model name."""
    provider, sep, name = model.partition("/")
    return (provider, name) if sep and name else ("openai", model)


@contextlib.contextmanager
def judge_span(
    tracer: trace.Tracer | None,
    *,
    model: str,
    temperature: float,
    api_base: str | None,
    run: AgentRun,
    attempt: int,
    messages: list[dict[str, str]],
) -> Iterator[Span]:
    """A `chat` span around one judge request; the caller records its outcome (`record_response`,
    `record_failure`). An exception leaving the block is recorded as the span's error too."""
    tracer = tracer if tracer is not None else trace.get_tracer(JUDGE_SCOPE)
    provider, name = _provider_and_model(model)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": name,
        "gen_ai.request.temperature": temperature,
        "toolscore.judge.attempt": attempt,
    }
    if api_base:
        attributes["server.address"] = api_base
    if run.agent_name:
        attributes["toolscore.judge.agent_name"] = run.agent_name
    if _capture_content():
        attributes["gen_ai.input.messages"] = json.dumps(
            [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]} for m in messages]
        )
    span = tracer.start_span(
        f"chat {name}", context=_NO_PARENT, kind=SpanKind.CLIENT, attributes=attributes, links=_run_link(run)
    )
    try:
        yield span
    except BaseException as exc:
        record_failure(span, type(exc).__name__, str(exc))
        raise
    finally:
        span.end()


def record_response(span: Span, response: Any, content: str | None, cost: float | None) -> None:
    """The reply's model, id, finish reason, token counts and cost on `span`, and its text when capture is on."""
    if not span.is_recording():
        return
    model = getattr(response, "model", None)
    if isinstance(model, str):
        span.set_attribute("gen_ai.response.model", model)
    response_id = getattr(response, "id", None)
    if isinstance(response_id, str):
        span.set_attribute("gen_ai.response.id", response_id)
    choices = getattr(response, "choices", None) or []
    reasons = [r for r in (getattr(c, "finish_reason", None) for c in choices) if isinstance(r, str)]
    if reasons:
        span.set_attribute("gen_ai.response.finish_reasons", reasons)
    usage = getattr(response, "usage", None)
    for attribute, field in (
        ("gen_ai.usage.input_tokens", "prompt_tokens"),
        ("gen_ai.usage.output_tokens", "completion_tokens"),
    ):
        value = getattr(usage, field, None)
        if isinstance(value, int):
            span.set_attribute(attribute, value)
    if cost is not None:
        span.set_attribute(COST_ATTRIBUTE, cost)
    if _capture_content() and content is not None:
        finish = reasons[0] if reasons else "stop"
        output = [{"role": "assistant", "parts": [{"type": "text", "content": content}], "finish_reason": finish}]
        span.set_attribute("gen_ai.output.messages", json.dumps(output))


def record_failure(span: Span, error_type: str, message: str) -> None:
    """The request failed: `error.type` (the exception's class, or the judge's failure kind) and an ERROR status."""
    if not span.is_recording():
        return
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, message[:300]))
