"""An agent run as an application instrumented with opentelemetry-instrumentation-openai-v2 records it, in the
GenAI conventions' default form (content capture on, no `gen_ai_latest_experimental` opt-in): the chat span
carries no messages, its `gen_ai.choice` and input message events go out as log records in its context.

The run: an `invoke_agent` span (the application's), one `chat` call (openai-v2's span, against a scripted
OpenAI server on 127.0.0.1) whose answer issues `get_weather` then `get_time` in parallel, and the two
`execute_tool` spans, started in the opposite order at the same instant (as an executor may): only the
model's order, read from the `gen_ai.choice` event, puts `get_weather` first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import openai
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from tests.openai_server import OpenAIServer, Reply, tool_calls_body

__all__ = ["CALLS", "MODEL_ORDER", "openai_v2", "run_agent"]

CALLS = [("call_w", "get_weather", '{"city": "Paris"}'), ("call_t", "get_time", '{"zone": "CET"}')]
"""The tool calls the scripted model issues, in its order."""
MODEL_ORDER = [name for _, name, _ in CALLS]
_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@contextmanager
def openai_v2(tracer_provider: TracerProvider, logger_provider: LoggerProvider) -> Iterator[None]:
    """openai-v2 instrumenting the `openai` client onto these providers, content capture on (unless the
    environment already says how), for the block."""
    before = os.environ.get(_CAPTURE)
    os.environ[_CAPTURE] = before or "true"
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()
        if before is None:
            del os.environ[_CAPTURE]
        else:
            os.environ[_CAPTURE] = before


def run_agent(tracer_provider: TracerProvider, server: OpenAIServer) -> None:
    """One run of the agent (see the module docstring); openai-v2 must be instrumenting (`openai_v2`)."""
    tracer = tracer_provider.get_tracer("agent-app")
    server.push(Reply(raw_body=tool_calls_body(CALLS)))
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    run_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=run_attrs):
        client.chat.completions.create(model="agent-test", messages=[{"role": "user", "content": "Paris?"}])
        started = time.time_ns()  # one instant for both tool spans
        spans = []
        for call_id, name, arguments in reversed(CALLS):
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": arguments,
            }
            spans.append(tracer.start_span(f"execute_tool {name}", attributes=attrs, start_time=started))
        for span in spans:
            span.end()
