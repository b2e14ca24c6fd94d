"""What to do once `toolscore serve` is ready, for the end of its ready line: the commands that use it, with the
options this collector needs (its port, its score store), and where agents send.

A new user's first look at a running collector is that line; without it the demo, `toolscore runs` and the
variables an agent needs were three pages away.
"""

from __future__ import annotations

from toolscore.collector.registry import Registry
from toolscore.collector.serve._config import ServeConfig
from toolscore.collector.serve.receivers._config import split_endpoint

__all__ = ["DOCS", "next_steps"]

DOCS = "docs/serve.md"
"""The collector's reference, named by its path in the repository (its README links the rest)."""

_DEMO_SERVICE = "toolscore-demo"
"""The `service.name` of `toolscore demo`'s runs (collector/cli/demo_runs.py), selected by its expectations."""
_DEFAULT_DEMO_ENDPOINT = "127.0.0.1:4317"
_DEFAULT_SCORES = ".toolscore/scores.db"
_ANY_HOST = frozenset({"", "0.0.0.0", "::"})


def _local(endpoint: str, port: int) -> str:
    """Where a sender on this machine reaches a receiver listening on `endpoint` (bound to `port`)."""
    host, _ = split_endpoint(endpoint)
    host = "127.0.0.1" if host in _ANY_HOST else host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _demo_loaded(registry: Registry | None) -> bool:
    """Whether an enabled expectation selects the demo's runs, so that `toolscore demo` gets scores back."""
    if registry is None:
        return False
    return any(
        e.enabled and e.match.service is not None and e.match.service.holds(_DEMO_SERVICE)
        for e in registry.index.expectations
    )


def next_steps(config: ServeConfig, grpc_port: int | None, http_port: int | None, registry: Registry | None) -> str:
    """`next: ...`: the demo (which sends plain text without a token: not offered beside TLS or a bearer token)
    and `toolscore runs`, with `--endpoint` and `--db` when not their defaults; where agents send, and the docs."""
    steps: list[str] = []
    store = config.score_store
    db = "" if store.path == _DEFAULT_SCORES else f" --db {store.path}"
    receiver = config.receiver
    plain = not receiver.tls and not receiver.bearer_token  # the demo sends plain text, without a token
    if grpc_port is not None and store.enabled and plain:
        grpc = _local(config.receiver.grpc_endpoint, grpc_port)
        endpoint = "" if grpc == _DEFAULT_DEMO_ENDPOINT else f" --endpoint {grpc}"
        demo = f"`toolscore demo{endpoint}{db}` sends sample agent runs here and prints their scores"
        if not _demo_loaded(registry):
            demo += " (once deploy/expectations/demo.yaml is loaded: registry.files)"
        steps.append(demo)
    if store.enabled:
        steps.append(f"`toolscore runs --since 10m{db}` lists the runs scored")
    scheme = "https" if config.receiver.tls else "http"
    senders = []
    if grpc_port is not None:
        senders.append(f"{scheme}://{_local(config.receiver.grpc_endpoint, grpc_port)} (gRPC)")
    if http_port is not None:
        senders.append(f"{scheme}://{_local(config.receiver.http_endpoint, http_port)} (OTLP/HTTP)")
    if senders:
        token = " and OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<receiver.bearer_token>"
        steps.append(
            f"agents send here with OTEL_EXPORTER_OTLP_ENDPOINT={' or '.join(senders)}"
            + (token if receiver.bearer_token else "")
        )
    steps.append(f"docs: {DOCS}")
    return "next: " + "; ".join(steps)
