"""`LimitedLog`: lines a flood repeats, at most one per kind in each interval, each saying how many it stands for."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from toolscore.collector.serve._limited_log import LimitedLog

_LOGGER = "toolscore.tests.limited_log"


def test_one_line_per_key_in_each_interval_and_the_next_says_how_many_were_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = LimitedLog(logging.getLogger(_LOGGER), every_s=0.2)
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        logged = [log.log(logging.INFO, "too_large", "refused %s", f"request {i}") for i in range(5)]
        assert log.log(logging.WARNING, "unsupported", "refused %s", "another kind")
        time.sleep(0.25)
        assert log.log(logging.INFO, "too_large", "refused %s", "request 5")
    assert logged == [True, False, False, False, False]
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "refused request 0"),
        (logging.WARNING, "refused another kind"),
        (logging.INFO, "refused request 5 (and 4 more like it since the last such line; at most one every 0.2s)"),
    ]


def test_threads_racing_on_one_key_log_it_once(caplog: pytest.LogCaptureFixture) -> None:
    log = LimitedLog(logging.getLogger(_LOGGER), every_s=60.0)
    start = threading.Barrier(8)

    def flood() -> None:
        start.wait()
        for _ in range(200):
            log.log(logging.INFO, "invalid", "refused")

    with caplog.at_level(logging.INFO, logger=_LOGGER):
        threads = [threading.Thread(target=flood) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(caplog.records) == 1


def test_a_level_the_logger_does_not_take_is_neither_logged_nor_counted(caplog: pytest.LogCaptureFixture) -> None:
    log = LimitedLog(logging.getLogger(_LOGGER), every_s=60.0)
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert not log.log(logging.INFO, "invalid", "refused")
        assert log.log(logging.WARNING, "invalid", "refused")
    assert [r.getMessage() for r in caplog.records] == ["refused"]
