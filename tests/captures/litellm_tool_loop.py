"""The shared tool loop (`openai_tool_loop.Loop`) with its model calls made through `litellm.completion`.

For the LiteLLM captures (`litellm-otel/`, `litellm-openinference/`; imports `litellm` when playing). The loop is
the one of the `openai` client captures: it calls `client.chat.completions.create(...)` and reads the response's
`choices[0].message` (or the streamed chunks' `choices[].delta`), which LiteLLM's `ModelResponse` and
`ModelResponseStream` give in the same shape. `Client` is the thin adapter: each request is
`litellm.completion(model="openai/<scripted model>", api_base=<the server>, ...)`, as a user reaches an
OpenAI-compatible server through LiteLLM. Only Chat Completions (`litellm.completion`); `play` is
`openai_tool_loop.play` with this client.

`LITELLM_LOCAL_MODEL_COST_MAP=True` is set before `litellm` is imported, so it reads its bundled price list rather
than fetching one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import openai_tool_loop
from capture_kit import APP_SPAN_NAME, Scenario, ScriptedOpenAI
from openai_tool_loop import Loop, Mode

__all__ = ["Client", "all_scenarios", "flush", "in_memory_provider", "play"]


def all_scenarios() -> dict[str, tuple[Scenario, Mode]]:
    """The loop's scenarios through Chat Completions (`litellm.completion` has no Responses API)."""
    return openai_tool_loop.all_scenarios(responses=False)


def in_memory_provider(folder: str) -> tuple[Any, Any]:
    """(the in-memory span exporter, the SDK tracer provider writing to it), the provider set as the global one
    before `litellm` is imported (LiteLLM's "otel" callback takes the global provider)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"capture-{folder}"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    return spans, provider


class Client:
    """`client.chat.completions.create(**request)` as `litellm.completion` on the scripted server."""

    def __init__(self, api_base: str) -> None:
        self.api_base = api_base
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, model: str, **request: Any) -> Any:
        import litellm

        return litellm.completion(
            model=f"openai/{model}", api_base=self.api_base, api_key="scripted", num_retries=0, **request
        )

    def close(self) -> None:
        pass


def play(loop_of: Callable[[Any], Loop], scenario: Scenario, tracer: Any) -> Loop:
    """Play `scenario` with the loop `loop_of(Client(...))` builds; g's two runs under the application span."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with ScriptedOpenAI(scenario.script) as server:
        loop = loop_of(Client(server.base_url))
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name.startswith("g_") else nullcontext()
        with app:
            for agent in loop.top_agents():
                loop.run(agent)
        server.assert_consumed()
    return loop


def flush() -> None:
    """Wait until every success callback LiteLLM has handed its worker threads (`litellm.utils.executor`) so far has
    run, so that their spans are exported: one task per worker, all held at one barrier, runs only once the tasks
    queued before them are done."""
    import threading

    import litellm.utils

    executor = litellm.utils.executor
    workers = executor._max_workers
    barrier = threading.Barrier(workers + 1)
    for _ in range(workers):
        executor.submit(barrier.wait)
    barrier.wait(timeout=60)
