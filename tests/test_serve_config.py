"""`toolscore serve` configuration: defaults, the YAML file, `TOOLSCORE_*` overrides, and errors that say where."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from toolscore.collector.error_text import error_message
from toolscore.collector.serve import ServeConfig

INVALID = Path(__file__).parent / "testdata" / "serve" / "invalid"


def _serve(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSCORE_"))}
    return subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**clean, **(env or {})},
    )


def _printed(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert isinstance(data, dict)
    return data


@pytest.mark.integration
def test_print_config_without_a_file_shows_the_embedded_defaults(tmp_path: Path) -> None:
    (tmp_path / "deploy" / "expectations").mkdir(parents=True)
    config = _printed(_serve("--print-config", cwd=tmp_path))
    assert config["receiver"]["grpc_endpoint"] == "127.0.0.1:4317"
    assert config["receiver"]["http_endpoint"] == "127.0.0.1:4318"
    assert config["registry"]["store"] == {"type": "sqlite", "path": ".toolscore/registry.db", "busy_timeout_ms": 5000}
    assert config["registry"]["files"] == ["deploy/expectations"]
    assert config["registry"]["watch_files"] is True
    assert config["score_store"]["path"] == ".toolscore/scores.db"
    assert config["telemetry"]["prometheus_enabled"] is True
    assert (config["telemetry"]["prometheus_host"], config["telemetry"]["prometheus_port"]) == ("127.0.0.1", 9464)
    assert config["forward"]["endpoint"] is None
    assert config["shutdown_grace_s"] == 10.0


@pytest.mark.integration
def test_print_config_documents_every_key_in_a_comment(tmp_path: Path) -> None:
    result = _serve("--print-config", cwd=tmp_path)
    lines = result.stdout.splitlines()
    keys = [i for i, line in enumerate(lines) if not line.lstrip().startswith("#")]
    assert len(keys) > 60
    assert all(lines[i - 1].lstrip().startswith("#") for i in keys), "every key is preceded by its description"


def _printed_key(stdout: str, section: str, key: str) -> tuple[str, str]:
    """The comment block above `section.key` in `--print-config`'s output, and the key's own line."""
    lines = stdout.splitlines()
    start = lines.index(f"{section}:")
    at = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(f"  {key}:"))
    above = at
    while lines[above - 1].lstrip().startswith("#"):
        above -= 1
    return " ".join(line.strip().lstrip("# ") for line in lines[above:at]), lines[at]


@pytest.mark.integration
def test_print_config_states_the_default_serve_runs_with_and_where_a_value_came_from(tmp_path: Path) -> None:
    """`prometheus_enabled: true` beside "Default: false" read as a bug; a value unlike its default says who set it."""
    comment, line = _printed_key(_serve("--print-config", cwd=tmp_path).stdout, "telemetry", "prometheus_enabled")
    assert comment.endswith("Default: true.")
    assert line == "  prometheus_enabled: true"
    (tmp_path / "serve.yaml").write_text("pipeline:\n  settle_ms: 300\n")
    env = {"OTEL_METRICS_EXPORTER": "otlp", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "0.0.0.0:4317"}
    result = _serve("--config", "serve.yaml", "--print-config", cwd=tmp_path, env=env)
    comment, line = _printed_key(result.stdout, "telemetry", "prometheus_enabled")
    assert comment.endswith("Default: true.")
    assert line == "  prometheus_enabled: false  # set by environment variable OTEL_METRICS_EXPORTER"
    assert _printed_key(result.stdout, "pipeline", "settle_ms")[1] == "  settle_ms: 300.0  # set by serve.yaml:2"
    grpc = "  grpc_endpoint: '0.0.0.0:4317'  # set by environment variable TOOLSCORE_RECEIVER__GRPC_ENDPOINT"
    assert _printed_key(result.stdout, "receiver", "grpc_endpoint")[1] == grpc
    assert _printed_key(result.stdout, "receiver", "http_endpoint")[1] == "  http_endpoint: '127.0.0.1:4318'"
    assert _printed(result)["telemetry"]["prometheus_enabled"] is False  # still YAML that reads back


@pytest.mark.integration
def test_without_deploy_directory_no_expectation_files_are_loaded(tmp_path: Path) -> None:
    assert _printed(_serve("--print-config", cwd=tmp_path))["registry"]["files"] == []


@pytest.mark.integration
def test_file_values_env_overrides_and_otel_variables_combine_by_precedence(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(
        "receiver:\n  grpc_endpoint: 127.0.0.1:5000\n  http_endpoint: 127.0.0.1:5001\n"
        "pipeline:\n  settle_ms: 50\n"
        "registry:\n  store: {type: memory}\n"
        "forward:\n  queue_max_requests: 10\n"
    )
    env = {
        "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "0.0.0.0:6000",
        "TOOLSCORE_REGISTRY__FILES": '["a.yaml", "b/"]',
        "TOOLSCORE_REGISTRY__STORE__TYPE": "postgres",
        "TOOLSCORE_REGISTRY__STORE__DSN": "postgresql://db/toolscore",
        "TOOLSCORE_SHUTDOWN_GRACE_S": "3.5",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
    }
    config = _printed(_serve("--config", str(path), "--print-config", cwd=tmp_path, env=env))
    assert config["receiver"]["grpc_endpoint"] == "0.0.0.0:6000", "the variable beats the file"
    assert config["receiver"]["http_endpoint"] == "127.0.0.1:5001", "the file beats the default"
    assert config["pipeline"]["settle_ms"] == 50.0
    assert config["registry"]["files"] == ["a.yaml", "b/"]
    assert config["registry"]["store"]["type"] == "postgres", "a different store kind replaces the file's"
    assert config["registry"]["store"]["dsn"] == "postgresql://db/toolscore"
    assert config["shutdown_grace_s"] == 3.5
    assert config["forward"]["endpoint"] == "http://collector:4317", "OTEL_* variables still apply"
    assert config["forward"]["queue_max_requests"] == 10, "a file key keeps the OTEL_* values of its section"


@pytest.mark.integration
def test_print_config_redacts_secrets(tmp_path: Path) -> None:
    env = {
        "TOOLSCORE_RECEIVER__BEARER_TOKEN": "s3cret",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k3y",
        "TOOLSCORE_PIPELINE__EXTRACT__PRIVACY__HASH_KEY": "h4sh",  # with it, a guessed value's marker is checkable
    }
    result = _serve("--print-config", cwd=tmp_path, env=env)
    config = _printed(result)
    assert config["receiver"]["bearer_token"] == "<redacted>"
    assert config["forward"]["headers"] == {"x-api-key": "<redacted>"}
    assert config["pipeline"]["extract"]["privacy"]["hash_key"] == "<redacted>"
    assert "s3cret" not in result.stdout
    assert "k3y" not in result.stdout
    assert "h4sh" not in result.stdout


@pytest.mark.integration
def test_print_config_redacts_the_password_of_a_connection_string(tmp_path: Path) -> None:
    env = {"TOOLSCORE_REGISTRY__STORE__TYPE": "postgres", "TOOLSCORE_REGISTRY__STORE__DSN": "postgresql://u:pw9@db/ts"}
    result = _serve("--print-config", cwd=tmp_path, env=env)
    assert _printed(result)["registry"]["store"]["dsn"] == "postgresql://u:<redacted>@db/ts"
    assert "pw9" not in result.stdout


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgresql://u:p@ss@h:5432/db", "postgresql://u:<redacted>@h:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://h/db?sslmode=require&password=abc", "postgresql://h/db?sslmode=require&password=<redacted>"),
        ("host=h password='a b\\' c' user=u", "host=h password=<redacted> user=u"),
        ("host=h PASSWORD = xyz user=u", "host=h PASSWORD = <redacted> user=u"),
    ],
)
def test_connection_string_passwords_are_redacted_in_every_form(dsn: str, shown: str) -> None:
    from toolscore.collector.serve._config_yaml import redact_connection_string

    assert redact_connection_string(dsn) == shown


def _expected_error(path: Path) -> tuple[int, str, str]:
    """The first line of each invalid file: `# error: <line>: <field>: <message substring>`."""
    line, field, message = path.read_text().splitlines()[0].removeprefix("# error: ").split(": ", 2)
    return int(line), field, message


@pytest.mark.integration
@pytest.mark.parametrize("path", sorted(INVALID.glob("*.yaml")), ids=lambda p: p.stem)
def test_invalid_config_file_exits_2_naming_file_line_and_field(path: Path, tmp_path: Path) -> None:
    line, field, message = _expected_error(path)
    result = _serve("--config", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{path}:{line}: {field}: {message}" in result.stderr


@pytest.mark.integration
def test_a_secret_written_as_a_number_is_not_repeated_on_stderr(tmp_path: Path) -> None:
    result = _serve("--config", str(INVALID / "secret_not_repeated.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "receiver.bearer_token: expected a string, got a number" in result.stderr
    assert "8675309" not in result.stderr


@pytest.mark.integration
def test_invalid_environment_value_exits_2_naming_the_variable(tmp_path: Path) -> None:
    env = {"TOOLSCORE_PIPELINE__SETTLE_MS": "soon", "TOOLSCORE_RECEIVER__GRPC_ENDPONT": "127.0.0.1:1"}
    result = _serve("--print-config", cwd=tmp_path, env=env)
    assert result.returncode == 2
    settle = "TOOLSCORE_PIPELINE__SETTLE_MS: pipeline.settle_ms: expected a number, got 'soon'"
    assert f"environment variable {settle}" in result.stderr
    misspelt = "TOOLSCORE_RECEIVER__GRPC_ENDPONT: receiver.grpc_endpont: unknown key; did you mean `grpc_endpoint`?"
    assert f"environment variable {misspelt}" in result.stderr


@pytest.mark.integration
def test_a_section_given_whole_as_json_is_named_by_the_variable_that_was_set(tmp_path: Path) -> None:
    result = _serve(
        "--print-config", cwd=tmp_path, env={"TOOLSCORE_PIPELINE": '{"settle_ms": "soon", "queue_size": 5}'}
    )
    assert result.returncode == 2
    assert "environment variable TOOLSCORE_PIPELINE: pipeline.settle_ms: expected a number, got 'soon'" in (
        result.stderr
    )
    assert "TOOLSCORE_PIPELINE__" not in result.stderr


@pytest.mark.integration
def test_a_bad_file_value_is_named_by_its_line_though_a_variable_set_another_key_of_its_section(
    tmp_path: Path,
) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("receiver:\n  grpc_endpoint: '4317'\n")
    result = _serve(
        "--config", str(path), "--print-config", cwd=tmp_path, env={"TOOLSCORE_RECEIVER__BEARER_TOKEN": "t"}
    )
    assert result.returncode == 2
    assert result.stderr == (
        "toolscore serve: invalid configuration:\n"
        f"  {path}:2: receiver.grpc_endpoint: endpoint '4317' must be host:port, e.g. 127.0.0.1:4317 or [::1]:4317\n"
    )


@pytest.mark.integration
def test_misspelt_section_variable_exits_2_rather_than_being_ignored(tmp_path: Path) -> None:
    result = _serve("--print-config", cwd=tmp_path, env={"TOOLSCORE_RECIEVER__GRPC_ENDPOINT": "127.0.0.1:1"})
    assert result.returncode == 2
    assert "environment variable TOOLSCORE_RECIEVER__GRPC_ENDPOINT: reciever: no such section; the sections are" in (
        result.stderr
    )


@pytest.mark.integration
def test_list_variable_that_is_not_json_names_the_variable_and_the_form(tmp_path: Path) -> None:
    result = _serve("--print-config", cwd=tmp_path, env={"TOOLSCORE_REGISTRY__FILES": "deploy/expectations"})
    assert result.returncode == 2
    assert "environment variable TOOLSCORE_REGISTRY__FILES: registry: not parsed: lists and maps are given as JSON" in (
        result.stderr
    )


@pytest.mark.integration
def test_rule_across_keys_names_the_variable_that_broke_it(tmp_path: Path) -> None:
    result = _serve("--print-config", cwd=tmp_path, env={"TOOLSCORE_PIPELINE__SETTLE_MS": "20000"})
    assert result.returncode == 2
    assert "environment variable TOOLSCORE_PIPELINE__SETTLE_MS: pipeline: max_hold_ms (10000.0) must be >=" in (
        result.stderr
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("registry", "scores"),
    [("x.db", "./x.db"), ("data/../x.db", "x.db"), (".toolscore/scores.db", "{tmp}/.toolscore/scores.db")],
)
def test_score_store_in_the_registry_file_exits_2_naming_both_keys_and_the_file(
    tmp_path: Path, registry: str, scores: str
) -> None:
    """Both stores' tables in one file would make every CLI command refuse it, as neither store's file."""
    (tmp_path / "data").mkdir()
    scores = scores.format(tmp=tmp_path)
    config = tmp_path / "serve.yaml"
    config.write_text(f"registry:\n  store:\n    path: {registry}\nscore_store:\n  path: {scores}\n")
    result = _serve("--config", str(config), "--print-config", cwd=tmp_path)  # the checks `serve` runs first
    assert result.returncode == 2, result.stderr
    file = (tmp_path / registry).resolve()
    assert f"{config}:" in result.stderr
    assert f"score_store.path {scores!r} and registry.store.path {registry!r} are the same file ({file})" in (
        result.stderr
    )


def _the_one_problem(tmp_path: Path, config: Path, yaml_text: str | None, env: dict[str, str]) -> str:
    """`toolscore serve --print-config` (with `yaml_text` as its `--config` when given) must exit 2 naming one
    problem: that line."""
    args = ["--print-config"]
    if yaml_text is not None:
        config.write_text(yaml_text)
        args = ["--config", str(config), *args]
    result = _serve(*args, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    problems = [line.strip() for line in result.stderr.splitlines()[1:]]
    assert len(problems) == 1, result.stderr
    return problems[0]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "yaml_text", "reported", "told"),
    [
        (
            {"TOOLSCORE_REGISTRY__STORE__PATH": ".toolscore/scores.db"},
            None,
            "environment variable TOOLSCORE_REGISTRY__STORE__PATH: registry.store.path: ",
            "(score_store.path: default; registry.store.path: environment variable TOOLSCORE_REGISTRY__STORE__PATH)",
        ),
        (
            {},
            "registry:\n  store:\n    path: .toolscore/scores.db\n",
            "{config}:3: registry.store.path: ",
            "(score_store.path: default; registry.store.path: {config}:3)",
        ),
        (
            {"TOOLSCORE_SCORE_STORE__PATH": ".toolscore/registry.db"},
            None,
            "environment variable TOOLSCORE_SCORE_STORE__PATH: score_store.path: ",
            "(score_store.path: environment variable TOOLSCORE_SCORE_STORE__PATH; registry.store.path: default)",
        ),
        (
            {"TOOLSCORE_REGISTRY__STORE__PATH": "x.db"},
            "registry:\n  poll_interval_s: 5\nscore_store:\n  path: x.db\n",
            "{config}:4: score_store.path: ",
            "(score_store.path: {config}:4; registry.store.path: environment variable TOOLSCORE_REGISTRY__STORE__PATH)",
        ),
    ],
    ids=["registry-variable", "registry-file", "score_store-variable", "score_store-file-registry-variable"],
)
def test_store_file_clash_is_reported_where_the_user_set_a_path_naming_where_each_came_from(
    tmp_path: Path, env: dict[str, str], yaml_text: str | None, reported: str, told: str
) -> None:
    """Not blamed on score_store, its default, when the user only set registry.store.path to the score store's file;
    nor on the file's registry section when a variable set the path."""
    config = tmp_path / "serve.yaml"
    problem = _the_one_problem(tmp_path, config, yaml_text, env)
    assert problem.startswith(reported.format(config=config))
    assert " are the same file " in problem
    assert problem.endswith(f"each need their own SQLite file {told.format(config=config)}")


@pytest.mark.integration
def test_score_store_beside_the_registry_or_disabled_is_fine(tmp_path: Path) -> None:
    env = {"TOOLSCORE_REGISTRY__STORE__PATH": "x.db", "TOOLSCORE_SCORE_STORE__PATH": "y.db"}
    assert _printed(_serve("--print-config", cwd=tmp_path, env=env))["score_store"]["path"] == "y.db"
    env = {"TOOLSCORE_REGISTRY__STORE__PATH": "x.db", "TOOLSCORE_SCORE_STORE__PATH": "x.db"}
    result = _serve("--print-config", cwd=tmp_path, env={**env, "TOOLSCORE_SCORE_STORE__ENABLED": "false"})
    assert _printed(result)["score_store"]["enabled"] is False
    env = {"TOOLSCORE_REGISTRY__STORE__TYPE": "memory", "TOOLSCORE_SCORE_STORE__PATH": ".toolscore/registry.db"}
    assert _printed(_serve("--print-config", cwd=tmp_path, env=env))["registry"]["store"] == {"type": "memory"}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "receiver"),
    [
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}, "receiver.grpc_endpoint 127.0.0.1:4317"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317"}, "receiver.grpc_endpoint 127.0.0.1:4317"),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
            "receiver.http_endpoint 127.0.0.1:4318",
        ),
        (
            {"TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "0.0.0.0:5317", "TOOLSCORE_FORWARD__ENDPOINT": "127.0.0.2:5317"},
            "receiver.grpc_endpoint 0.0.0.0:5317",
        ),
    ],
)
def test_forwarding_to_its_own_receiver_exits_2(tmp_path: Path, env: dict[str, str], receiver: str) -> None:
    """The agents' `OTEL_EXPORTER_OTLP_*` variables, left set where the collector starts, would loop every span."""
    result = _serve("--print-config", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert f"is this collector's own receiver ({receiver}): every span would be forwarded back" in result.stderr


_OWN_GRPC = "forward.endpoint {forward!r} is this collector's own receiver (receiver.grpc_endpoint {listen}): "
_OWN_HTTP = "forward.endpoint {forward!r} is this collector's own receiver (receiver.http_endpoint {listen}): "


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "yaml_text", "reported", "told"),
    [
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317"},
            None,
            "environment variable OTEL_EXPORTER_OTLP_ENDPOINT: forward.endpoint: "
            + _OWN_GRPC.format(forward="http://localhost:4317", listen="127.0.0.1:4317"),
            "(forward.endpoint: environment variable OTEL_EXPORTER_OTLP_ENDPOINT; receiver.grpc_endpoint: default)",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:5317",
                "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "0.0.0.0:5317",
            },
            None,
            "environment variable TOOLSCORE_RECEIVER__GRPC_ENDPOINT: receiver.grpc_endpoint: "
            + _OWN_GRPC.format(forward="http://127.0.0.1:5317", listen="0.0.0.0:5317"),
            "(forward.endpoint: environment variable OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; "
            "receiver.grpc_endpoint: environment variable TOOLSCORE_RECEIVER__GRPC_ENDPOINT)",
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:5318"},
            "receiver:\n  grpc_enabled: false\n  http_endpoint: 127.0.0.1:5318\n",
            "{config}:3: receiver.http_endpoint: "
            + _OWN_HTTP.format(forward="http://127.0.0.1:5318/v1/traces", listen="127.0.0.1:5318"),
            "(forward.endpoint: environment variable OTEL_EXPORTER_OTLP_ENDPOINT; receiver.http_endpoint: {config}:3)",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "[::]:5317"},
            "forward:\n  senders: 1\n  endpoint: localhost:5317\n",
            "{config}:3: forward.endpoint: " + _OWN_GRPC.format(forward="localhost:5317", listen="[::]:5317"),
            "(forward.endpoint: {config}:3; "
            "receiver.grpc_endpoint: environment variable TOOLSCORE_RECEIVER__GRPC_ENDPOINT)",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
                "TOOLSCORE_FORWARD__ENDPOINT": "127.0.0.2:4317",
            },
            None,
            "environment variable TOOLSCORE_FORWARD__ENDPOINT: forward.endpoint: "
            + _OWN_GRPC.format(forward="127.0.0.2:4317", listen="127.0.0.1:4317"),
            "(forward.endpoint: environment variable TOOLSCORE_FORWARD__ENDPOINT; receiver.grpc_endpoint: default)",
        ),
    ],
    ids=[
        "otel-variable",
        "receiver-variable-otel-traces-variable",
        "receiver-file-otel-variable-http",
        "forward-file-receiver-variable",
        "forward-variable-over-otel",
    ],
)
def test_forwarding_to_its_own_receiver_is_reported_where_the_user_set_a_key_naming_where_each_came_from(
    tmp_path: Path, env: dict[str, str], yaml_text: str | None, reported: str, told: str
) -> None:
    """Not blamed on forward's defaults when an agent's `OTEL_EXPORTER_OTLP_*` variable set the endpoint: that
    variable is named; and reported at the receiver key the user set rather than at that inherited variable."""
    config = tmp_path / "serve.yaml"
    problem = _the_one_problem(tmp_path, config, yaml_text, env)
    assert problem.startswith(reported.format(config=config)), problem
    assert problem.endswith(f"(they are for the agents that send to it) {told.format(config=config)}")


@pytest.mark.integration
def test_forwarding_to_the_same_port_elsewhere_is_fine(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}
    assert _printed(_serve("--print-config", cwd=tmp_path, env=env))["forward"]["endpoint"] == "http://collector:4317"
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317", "TOOLSCORE_RECEIVER__GRPC_ENABLED": "false"}
    assert _printed(_serve("--print-config", cwd=tmp_path, env=env))["forward"]["endpoint"] == "http://127.0.0.1:4317"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("endpoint", "protocol", "message"),
    [
        ("ftp://collector:4317", "grpc", "must be an http:// or https:// URL (or host:port for gRPC)"),
        ("collector", "grpc", "must be host:port"),
        (
            "http://collector:4318/v1/traces",
            "grpc",
            "but the protocol is grpc, which sends to host:port only: for an OTLP/HTTP endpoint set "
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
        ),
        ("collector:4318", "http/protobuf", "an OTLP/HTTP endpoint is a URL"),
    ],
)
def test_forward_endpoint_that_cannot_work_exits_2(tmp_path: Path, endpoint: str, protocol: str, message: str) -> None:
    env = {"TOOLSCORE_FORWARD__ENDPOINT": endpoint, "TOOLSCORE_FORWARD__PROTOCOL": protocol}
    result = _serve("--print-config", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert f"environment variable TOOLSCORE_FORWARD__ENDPOINT: forward.endpoint: endpoint {endpoint!r}" in result.stderr
    assert message in result.stderr


@pytest.mark.integration
def test_unknown_log_level_exits_2_listing_the_levels(tmp_path: Path) -> None:
    result = _serve("--log-level", "verbose", "--print-config", cwd=tmp_path)
    assert result.returncode == 2
    assert "Invalid value for '--log-level': 'verbose' is not one of" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    result = _serve("--config", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path / 'nope.yaml'}: <root>: cannot read: No such file or directory" in result.stderr


def _listening_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.integration
def test_taken_ports_are_all_reported_at_once_with_their_keys_and_variables_exit_2(tmp_path: Path) -> None:
    """Checked before anything starts: every taken address in one message, none of grpc's own log lines."""
    with _listening_socket() as grpc_sock, _listening_socket() as metrics_sock:
        grpc_port, metrics_port = grpc_sock.getsockname()[1], metrics_sock.getsockname()[1]
        env = {
            "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": f"127.0.0.1:{grpc_port}",
            "TOOLSCORE_RECEIVER__HTTP_ENDPOINT": "127.0.0.1:0",
            "TOOLSCORE_TELEMETRY__PROMETHEUS_PORT": str(metrics_port),
        }
        result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("toolscore serve: cannot start: 2 listening addresses unavailable"), result.stderr
    lines = result.stderr.splitlines()
    assert (
        f"  receiver.grpc_endpoint 127.0.0.1:{grpc_port} (TOOLSCORE_RECEIVER__GRPC_ENDPOINT; OTLP/gRPC receiver): "
        "Address already in use" in lines
    )
    assert (
        f"  telemetry.prometheus_port 127.0.0.1:{metrics_port} (TOOLSCORE_TELEMETRY__PROMETHEUS_PORT, "
        "OTEL_EXPORTER_PROMETHEUS_PORT; Prometheus metrics endpoint): Address already in use" in lines
    )
    assert "add_port.cc" not in result.stderr
    assert "Failed to add port" not in result.stderr
    assert len(lines) == 3, result.stderr


@pytest.mark.integration
def test_two_of_its_own_listeners_on_one_port_are_reported_before_either_starts(tmp_path: Path) -> None:
    with _listening_socket() as sock:  # a port free once this closes: nothing else holds it
        port = sock.getsockname()[1]
    env = {
        "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": f"0.0.0.0:{port}",
        "TOOLSCORE_RECEIVER__HTTP_ENDPOINT": f"127.0.0.1:{port}",
        "TOOLSCORE_TELEMETRY__PROMETHEUS_ENABLED": "false",
    }
    result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert (
        f"  receiver.http_endpoint 127.0.0.1:{port} (TOOLSCORE_RECEIVER__HTTP_ENDPOINT; OTLP/HTTP receiver and "
        f"health endpoints): the same port as receiver.grpc_endpoint (0.0.0.0:{port})\n" in result.stderr
    )


@pytest.mark.integration
@pytest.mark.parametrize("args", [("--print-config",), ()], ids=["print_config", "start"])
def test_a_tls_file_that_cannot_be_read_exits_2_naming_its_key_and_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Not blamed on the receiver that would have opened it first (`receiver.grpc_endpoint`)."""
    from tests.certs import self_signed_certificate

    cert, _ = self_signed_certificate(tmp_path)
    path = tmp_path / "serve.yaml"
    path.write_text(
        "receiver:\n  grpc_endpoint: 127.0.0.1:0\n  http_endpoint: 127.0.0.1:0\n"
        f"  tls_cert_file: {cert}\n  tls_key_file: {tmp_path / 'missing.key'}\n"
        "telemetry: {prometheus_enabled: false}\n"
    )
    result = _serve("--config", str(path), *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    key = f"{path}:5: receiver.tls_key_file: cannot read '{tmp_path / 'missing.key'}': No such file or directory"
    assert result.stderr == f"toolscore serve: invalid configuration:\n  {key}\n"
    env = {"TOOLSCORE_RECEIVER__TLS_CERT_FILE": str(tmp_path)}  # a directory: opens, but not for reading
    result = _serve("--config", str(path), *args, cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    told = f"TOOLSCORE_RECEIVER__TLS_CERT_FILE: receiver.tls_cert_file: cannot read '{tmp_path}': Is a directory"
    assert f"  environment variable {told}\n" in result.stderr


@pytest.mark.integration
def test_readable_tls_files_are_printed_as_given(tmp_path: Path) -> None:
    from tests.certs import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path)
    env = {"TOOLSCORE_RECEIVER__TLS_CERT_FILE": str(cert), "TOOLSCORE_RECEIVER__TLS_KEY_FILE": str(key)}
    receiver = _printed(_serve("--print-config", cwd=tmp_path, env=env))["receiver"]
    assert (receiver["tls_cert_file"], receiver["tls_key_file"]) == (str(cert), str(key))


@pytest.mark.integration
@pytest.mark.parametrize(
    ("protocol", "endpoint"), [("grpc", "127.0.0.1:1"), ("http/protobuf", "https://127.0.0.1:1/v1/traces")]
)
def test_a_forward_tls_file_that_cannot_be_read_exits_1_naming_its_key(
    tmp_path: Path, protocol: str, endpoint: str
) -> None:
    """gRPC named only the path; urllib3 reads the CA at its first connection, so every export failed instead."""
    env = {"TOOLSCORE_RECEIVER__HTTP_ENDPOINT": "127.0.0.1:0", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "127.0.0.1:0"}
    env |= {"TOOLSCORE_TELEMETRY__PROMETHEUS_ENABLED": "false", "TOOLSCORE_FORWARD__PROTOCOL": protocol}
    env |= {"TOOLSCORE_FORWARD__ENDPOINT": endpoint, "TOOLSCORE_FORWARD__CERTIFICATE_FILE": "ca.pem"}
    result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    told = "forward.certificate_file: cannot read 'ca.pem': No such file or directory"
    assert result.stderr.endswith(f"toolscore serve: cannot start: forwarder: {told}\n")


@pytest.mark.integration
def test_invalid_expectation_files_exit_2_listing_each_problem_under_registry_files(tmp_path: Path) -> None:
    """One problem per line, as the configuration's own are, blamed on the files rather than the store; and
    status 2, as for every other configuration error."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: e\nenabled: maybe\nmatch: {agent: a}\nscorers: [{type: trajectry}]\n")
    env = {"TOOLSCORE_RECEIVER__HTTP_ENDPOINT": "127.0.0.1:0", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "127.0.0.1:0"}
    env |= {"TOOLSCORE_TELEMETRY__PROMETHEUS_ENABLED": "false", "TOOLSCORE_REGISTRY__FILES": f'["{bad}", "nope.yaml"]'}
    result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr.endswith(
        "toolscore serve: cannot start: invalid expectation files (registry.files):\n"
        f"  {bad}:2: enabled: expected true or false, got 'maybe'\n"
        f"  {bad}:4: scorers[0]: unknown type 'trajectry'; did you mean `trajectory`?\n"
        "  nope.yaml: <root>: cannot read: No such file or directory\n"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("content", "line", "told"),
    [
        (b'name: e\nmatch: {agent: "\xff"}\n', 2, "not UTF-8 text: byte 0xff at offset 24 (invalid start byte)"),
        (b"[" * 3000 + b"]" * 3000, 1, "nests deeper than 24 levels, the limit of a document"),
    ],
    ids=["not_utf8", "3000_deep"],
)
def test_an_unreadable_expectation_file_exits_2_naming_the_file(
    tmp_path: Path, content: bytes, line: int, told: str
) -> None:
    """Not the store (`registry store: 'utf-8' codec can't decode...`), and no traceback."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    env = {"TOOLSCORE_RECEIVER__HTTP_ENDPOINT": "127.0.0.1:0", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "127.0.0.1:0"}
    env |= {"TOOLSCORE_TELEMETRY__PROMETHEUS_ENABLED": "false", "TOOLSCORE_REGISTRY__FILES": f'["{bad}"]'}
    result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr.endswith(
        f"toolscore serve: cannot start: invalid expectation files (registry.files):\n  {bad}:{line}: <root>: {told}\n"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_unusable_store_files_exit_1_naming_the_file_and_its_key(tmp_path: Path) -> None:
    (tmp_path / "scores.db").write_text("not a database, though long enough to be read as one\n" * 20)
    (tmp_path / ".toolscore").write_text("a file where the directory should be")
    env = {"TOOLSCORE_RECEIVER__HTTP_ENDPOINT": "127.0.0.1:0", "TOOLSCORE_RECEIVER__GRPC_ENDPOINT": "127.0.0.1:0"}
    env["TOOLSCORE_TELEMETRY__PROMETHEUS_ENABLED"] = "false"
    result = _serve(cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert "cannot start: expectations registry (.toolscore/registry.db, registry.store.path):" in result.stderr
    (tmp_path / ".toolscore").unlink()
    result = _serve(cwd=tmp_path, env={**env, "TOOLSCORE_SCORE_STORE__PATH": "scores.db"})
    assert result.returncode == 1
    assert "cannot start: score store (scores.db, score_store.path): file is not a database" in result.stderr


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"forward": {"endpiont": "x"}}, "unknown key; did you mean `endpoint`?"),
        ({"pipeline": {"judge": {"max_concurency": 2}}}, "unknown key; did you mean `max_concurrency`?"),
        ({"telemetry": {"zzz": 1}}, "unknown key; known keys here: "),
        ({"receiver": {"zzzzzzzz": 1}}, "unknown key (none of the "),
        ({"pipeline": {"settle_ms": "soon"}}, "expected a number, got 'soon'"),
    ],
)
def test_an_unknown_key_is_named_with_the_key_meant(document: dict[str, Any], message: str) -> None:
    """The nearest key at that place in the configuration, else the keys there, else how many there are."""
    with pytest.raises(ValidationError) as caught:
        ServeConfig.model_validate(document)
    (error,) = caught.value.errors()
    assert error_message(error, ServeConfig).startswith(message)
