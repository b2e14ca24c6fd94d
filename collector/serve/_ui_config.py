"""`ui`: where the runs page listens, who may read it, and where its trace links point."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolscore.collector.serve.receivers._config import split_endpoint

__all__ = ["UiConfig"]


class UiConfig(BaseModel):
    """The page `toolscore serve` (and `toolscore ui`) serves: the runs, one run, the expectations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=True, description="Serve the page (it reads the score store). Default: true.")
    endpoint: str = Field(
        default="127.0.0.1:4330",
        description="host:port the page listens on; 127.0.0.1 keeps it on this machine (port 0: any free port). "
        "Default: 127.0.0.1:4330.",
    )
    bearer_token: str | None = Field(
        default=None,
        description="When set, every request must carry `authorization: Bearer <token>`, or the cookie a visit "
        "to `/?token=<token>` sets; others get 401. Default: unset (no auth).",
    )
    trace_url: str | None = Field(
        default=None,
        description="Link from a run to its trace in your trace backend, `{trace_id}` and `{span_id}` "
        "replaced, e.g. http://localhost:16686/trace/{trace_id} (Jaeger). Default: unset (ids only).",
    )
    page_size: int = Field(default=50, ge=1, le=1000, description="Runs per page. Default: 50.")
    poll_interval_ms: int = Field(
        default=2_000, ge=200, description="How often an open runs page asks for new runs. Default: 2000."
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        split_endpoint(value)
        return value

    @model_validator(mode="after")
    def _token_not_blank(self) -> UiConfig:
        if self.bearer_token is not None and not self.bearer_token.strip():
            raise ValueError("bearer_token must not be blank: leave it unset to turn auth off")
        return self
