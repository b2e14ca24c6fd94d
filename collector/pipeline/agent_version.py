"""Which version of an agent made a run, read from the run span and its resource.

Releases bring most tool-use regressions (a new prompt, model or tool description), so every run's
verdicts carry the version that produced it, and the canary alert compares versions (docs/deploy.md).
Where the conventions put it, in the order they are read (the first non-empty one wins):

# run span   gen_ai.agent.version           OTel GenAI semconv (invoke_agent / create_agent spans)
# run span   langfuse.version               Langfuse SDK: the trace's `version` (release of the app)
# run span   llm.prompt_template.version    OpenInference: the prompt template's version
# resource   service.version                OTel resource semconv: the service's version

A version carried in baggage reaches the span through the SDK's `BaggageSpanProcessor`
(opentelemetry-processor-baggage), which copies each baggage entry onto the span as an attribute of the
same key: name that key in `span_attributes`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolscore.scorers._model import AgentRun

__all__ = ["AgentVersionConfig", "agent_version"]

MAX_VERSION_CHARS = 128
"""A version is a label value: a longer one (a mistaken payload) is cut."""


class AgentVersionConfig(BaseModel):
    """Where a run's agent version is read from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    span_attributes: tuple[str, ...] = Field(
        default=("gen_ai.agent.version", "langfuse.version", "llm.prompt_template.version"),
        description="Run span attributes read for the version, first non-empty wins (a baggage key copied "
        "onto spans by the BaggageSpanProcessor works too). "
        "Default: [gen_ai.agent.version,langfuse.version,llm.prompt_template.version].",
    )
    resource_attributes: tuple[str, ...] = Field(
        default=("service.version",),
        description="Resource attributes read when no span attribute holds a version. Default: [service.version].",
    )


def agent_version(run: AgentRun, config: AgentVersionConfig | None = None) -> str | None:
    """The run's agent version, or None when neither its span nor its resource says one."""
    config = config or _DEFAULT
    for names, attributes in ((config.span_attributes, run.attributes), (config.resource_attributes, run.resource)):
        for name in names:
            value = attributes.get(name)
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            text = str(value).strip()
            if text:
                return text[:MAX_VERSION_CHARS]
    return None


_DEFAULT = AgentVersionConfig()
