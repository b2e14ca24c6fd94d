"""Two agent runs whose content holds secrets, as real OTel SDK spans, and the expectation they are scored with.

The first run pays with the card the expectation names, the second with another one, so equality rules pass the
first and fail the second, with or without masking. Every secret is an argument value or the request text:
an email (masked by the default patterns), a token under a masked key (`*.token`) and card numbers (Luhn-checked
by the default patterns).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = [
    "ARGS",
    "MASKING",
    "REQUEST",
    "SECRETS",
    "VALUES",
    "expectation_file",
    "privacy_runs",
    "record_runs",
    "trace_file",
]

EMAIL = "ada.lovelace@example.com"
TOKEN = "sk-live-7Qx9Zr4Wabc"
CARD = "4111 1111 1111 1111"
OTHER_CARD = "5500 0000 0000 0004"
REQUEST = "Charge my card and email the receipt to ada.lovelace@example.com"
SECRETS = (EMAIL, TOKEN, CARD, OTHER_CARD)
"""What masking must keep out of every output."""

ARGS = {"to": EMAIL, "auth": {"token": TOKEN}, "card": {"number": CARD, "holder": "Augusta"}, "amount": 987654}
VALUES = (*SECRETS, "Augusta", "987654", "Charge my card")
"""Every argument value and the request text: what `names_only` must keep out of every output."""

MASKING = {"mask_keys": ["*.token"], "default_patterns": True, "hash_key": "privacy-test-key"}


def _run(tracer: Any, args: dict[str, Any]) -> None:
    prompt = [{"role": "user", "parts": [{"type": "text", "content": REQUEST}]}]
    run = tracer.start_span(
        "invoke_agent payer",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "payer",
            "gen_ai.input.messages": json.dumps(prompt),
        },
    )
    context = trace_api.set_span_in_context(run)
    call = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "charge", "arguments": args}]}]
    chat = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(prompt)}
    tracer.start_span(
        "chat model", context=context, attributes={**chat, "gen_ai.output.messages": json.dumps(call)}
    ).end()
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "charge",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.arguments": json.dumps(args),
        "gen_ai.tool.call.result": json.dumps({"receipt_sent_to": EMAIL}),
    }
    tracer.start_span("execute_tool charge", context=context, attributes=tool).end()
    run.end()


def record_runs(tracer: Any) -> None:
    """The two runs, recorded with `tracer`: the first pays with the expected card, the second with another."""
    _run(tracer, ARGS)
    _run(tracer, {**ARGS, "card": {"number": OTHER_CARD, "holder": "Augusta"}})


def privacy_runs() -> list[ReadableSpan]:
    """The two runs' spans, ended, as an exporter gets them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    record_runs(provider.get_tracer("privacy-test"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_file(tmp_path: Path, spans: list[ReadableSpan]) -> Path:
    path = tmp_path / "runs.pb"
    path.write_bytes(encode_spans(spans).SerializeToString())
    return path


def expectation_file(tmp_path: Path, judge_base: str | None = None, *, one_of: bool = True) -> Path:
    """Equality rules on every argument (`trajectory`, `f1` with a `one_of` on the email unless `one_of` is
    false: names_only refuses it), and the judge."""
    scorers: list[dict[str, Any]] = [
        {"type": "trajectory", "mode": "strict", "expected": [{"name": "charge", "args": ARGS}]},
        {
            "type": "f1",
            "expected": [{"name": "charge", "args": ARGS}],
            "args_match": {
                "mode": "exact",
                "matchers": {"to": {"type": "one_of", "values": [EMAIL]}} if one_of else {},
            },
        },
    ]
    if judge_base is not None:
        scorers.append(
            {
                "type": "llm_judge",
                "model": "openai/judge-test",
                "api_base": judge_base,
                "api_key": "test",
                "max_retries": 0,
                "timeout_s": 60.0,  # a loaded machine imports litellm in seconds, in each process
            }
        )
    doc = {"name": "payments", "match": {"agent": {"equals": "payer"}}, "scorers": scorers}
    path = tmp_path / "expectations.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
