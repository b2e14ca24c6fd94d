"""Forking the real test process: the child does its part, writes what it saw to a pipe as JSON and leaves
with `os._exit` (no pytest teardown in the child), while the parent goes on with the test."""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["FORK_MARKS", "Forked", "in_child"]

FORK_MARKS = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only"),
    # Python 3.12+ warns on forking a process with threads; forking one is what these tests do.
    pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning"),
]
"""The marks of a module whose tests fork."""


class Forked:
    """A child forked now, running `body`; the parent returns at once and gets what it returned from `result`."""

    def __init__(self, body: Callable[[], Any], timeout_s: float = 20.0) -> None:
        self._timeout_s = timeout_s
        read_fd, write_fd = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the child: never return into pytest
            os.close(read_fd)
            try:
                payload = {"ok": body()}
            except BaseException as exc:
                payload = {"error": f"{type(exc).__name__}: {exc}"}
            with os.fdopen(write_fd, "w") as out:
                json.dump(payload, out)
            os._exit(0)
        os.close(write_fd)
        self._pipe = os.fdopen(read_fd)

    def result(self) -> Any:
        """What `body` returned (JSON), once the child exited; raises what went wrong there. A child still
        running after `timeout_s` (stuck on a lock it inherited held, say) is killed and fails the test."""
        deadline = time.monotonic() + self._timeout_s
        with self._pipe as pipe:
            text = b""
            while select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(pipe.fileno(), 1 << 16)
                if not chunk:
                    break
                text += chunk
            else:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
                raise AssertionError(f"the child did not finish within {self._timeout_s} s")
        while os.waitpid(self._pid, os.WNOHANG) == (0, 0):
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        assert text, "the child wrote nothing"
        outcome = json.loads(text)
        assert "error" not in outcome, outcome["error"]
        return outcome["ok"]


def in_child(body: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    """Fork; run `body` in the child and return what it returned (JSON), or raise what went wrong there."""
    return Forked(body, timeout_s).result()
