"""A setting naming a file the collector reads when it starts (a TLS certificate or key), checked with the
configuration.

Left to the component that opens it, a missing file surfaced as that component's failure, blamed on
whatever that component is known by (`OTLP/gRPC receiver (127.0.0.1:4317, receiver.grpc_endpoint): No such
file or directory`), and `--print-config` showed the configuration as good. Checked as the value is
validated, the error names the key, its value and where it was set, at `--print-config` and at startup alike.

The check is not premature: the files are read once, as the receivers start, right after the configuration
is loaded, and never again (a renewed certificate takes a restart), so a file that is not readable then
cannot be used by this process anyway. Orchestrators mount secrets before they start the container.
`check_readable` is also the forwarder's start check (`forward_transport.make_transport`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

__all__ = ["ReadableFile", "check_readable"]


def check_readable(path: str) -> str:
    """`path`, when it opens for reading; else a `ValueError` saying why, with the path."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    return path


ReadableFile = Annotated[str, AfterValidator(check_readable)]
"""A path that opens for reading when the configuration is validated."""
