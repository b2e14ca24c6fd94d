"""`instrument()` reads `TOOLSCORE_PIPELINE__*` like `toolscore serve`; a bad value is logged, never fatal."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from toolscore.collector.instrumentation import instrument
from toolscore.collector.pipeline import PipelineConfig, pipeline_config_from_env
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore


def test_variables_override_the_defaults_at_every_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCORE_PIPELINE__SETTLE_MS", "250")
    monkeypatch.setenv("TOOLSCORE_PIPELINE__MAX_PENDING_TRACES", "77")
    monkeypatch.setenv("TOOLSCORE_PIPELINE__EXTRACT__MAX_CALLS_PER_RUN", "9")
    monkeypatch.setenv("toolscore_pipeline__judge__timeout_s", "3.5")  # names are not case-sensitive
    config = pipeline_config_from_env()
    assert (config.settle_ms, config.max_pending_traces) == (250.0, 77)
    assert (config.extract.max_calls_per_run, config.judge.timeout_s) == (9, 3.5)
    assert config.queue_size == PipelineConfig().queue_size


def test_a_bad_value_is_logged_by_name_and_only_that_key_keeps_its_default(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOLSCORE_PIPELINE__SETTLE_MS", "soon")
    monkeypatch.setenv("TOOLSCORE_PIPELINE__SETLE_MS", "5")  # a typo is an unknown key
    monkeypatch.setenv("TOOLSCORE_PIPELINE__EXTRACT__MAX_CALLS_PER_RUN", "-3")
    monkeypatch.setenv("TOOLSCORE_PIPELINE__QUEUE_SIZE", "123")
    with caplog.at_level(logging.WARNING, logger="toolscore.collector.pipeline.config_env"):
        config = pipeline_config_from_env()
    assert config.settle_ms == PipelineConfig().settle_ms
    assert config.extract.max_calls_per_run == PipelineConfig().extract.max_calls_per_run
    assert config.queue_size == 123
    logged = caplog.text
    for name in (
        "TOOLSCORE_PIPELINE__SETTLE_MS",
        "TOOLSCORE_PIPELINE__SETLE_MS",
        "TOOLSCORE_PIPELINE__EXTRACT__MAX_CALLS_PER_RUN",
    ):
        assert name in logged
    assert "TOOLSCORE_PIPELINE__SETLE_MS ignored, its default is used: unknown key; did you mean `settle_ms`?" in logged
    assert "TOOLSCORE_PIPELINE__SETTLE_MS ignored, its default is used: expected a number, got 'soon'" in logged
    assert "TOOLSCORE_PIPELINE__EXTRACT__MAX_CALLS_PER_RUN ignored, its default is used: must be >= 0, got -3" in logged
    assert "TOOLSCORE_PIPELINE__QUEUE_SIZE" not in logged


def test_malformed_json_for_a_section_falls_back_to_the_defaults(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOLSCORE_PIPELINE__EXTRACT", "{not json")
    with caplog.at_level(logging.WARNING, logger="toolscore.collector.pipeline.config_env"):
        assert pipeline_config_from_env() == PipelineConfig()
    assert "TOOLSCORE_PIPELINE__" in caplog.text


def test_a_rule_across_keys_names_the_variables_that_broke_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TOOLSCORE_PIPELINE__SETTLE_MS", "20000")  # above max_hold_ms' default
    with caplog.at_level(logging.WARNING, logger="toolscore.collector.pipeline.config_env"):
        config = pipeline_config_from_env()
    assert config == PipelineConfig()
    assert "TOOLSCORE_PIPELINE__SETTLE_MS ignored, the pipeline defaults are used: max_hold_ms" in caplog.text
    assert "must be >= settle_ms (20000.0)" in caplog.text


def test_instrument_uses_the_environment_unless_a_config_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCORE_PIPELINE__SETTLE_MS", "321")
    with Registry(MemoryStore()) as registry:
        from_env = instrument(registry, tracer_provider=TracerProvider(), next_processor=SpanProcessor())
        explicit = instrument(
            registry,
            tracer_provider=TracerProvider(),
            next_processor=SpanProcessor(),
            config=PipelineConfig(settle_ms=5),
        )
        try:
            assert from_env.config.settle_ms == 321.0
            assert explicit.config.settle_ms == 5.0
        finally:
            assert from_env.shutdown() is None
            assert explicit.shutdown() is None
