"""`RegistryServerConfig`: where the registry API listens, who may use it, and what one client may hold."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["RegistryServerConfig"]


class RegistryServerConfig(BaseModel):
    """Where the registry API listens, and who may use it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field(default="127.0.0.1", description="Interface to listen on; `0.0.0.0` for every interface.")
    port: int = Field(default=4320, ge=0, le=65535, description="TCP port; 0 picks a free one.")
    token: str | None = Field(
        default=None, description="Bearer token writes must carry (`authorization: Bearer <token>`); None: no auth."
    )
    auth_reads: bool = Field(default=False, description="Require the token for reads and watches too.")
    tls_cert_file: str | None = Field(default=None, description="PEM certificate chain; serves TLS when set.")
    tls_key_file: str | None = Field(default=None, description="PEM private key of `tls_cert_file`.")
    grace_s: float = Field(default=5.0, ge=0, description="How long calls in flight may finish at shutdown.")
    watch_queue_size: int = Field(
        default=10_000,
        ge=1,
        description="Changes a watch may hold for a client that does not keep up; past it the stream ends with "
        "RESOURCE_EXHAUSTED naming the `since_seq` to watch again from.",
    )
    max_watches: int = Field(
        default=100,
        ge=1,
        description="Watch streams served at once; a watch beyond them is refused with RESOURCE_EXHAUSTED. "
        "Each holds a queue of up to `watch_queue_size` changes and a subscription the registry feeds.",
    )

    @field_validator("token")
    @classmethod
    def _token_not_blank(cls, token: str | None) -> str | None:
        """`--token "$TOKEN"` with the variable unset would otherwise serve writes to anyone, unannounced."""
        if token is not None and not token.strip():
            raise ValueError("the token must not be blank: leave it unset to turn auth off")
        return token

    @model_validator(mode="after")
    def _tls_pair(self) -> RegistryServerConfig:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together: set both or neither")
        if self.auth_reads and not self.token:
            raise ValueError("auth_reads needs a token")
        return self
