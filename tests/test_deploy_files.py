"""The image, compose stack and OpenTelemetry Collector configs agree with toolscore and with each other.

Static checks only: no Docker, nothing pulled. Toolscore's side comes from the real code (ServeConfig and
its loader, the metric table); the Collector's side from the vendored component list of the pinned
otelcol-contrib release (tests/testdata/deploy/otelcol-contrib-components.yaml).
"""

from __future__ import annotations

import glob
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy_files import (
    COMPONENTS,
    COMPOSE_DIR,
    DEPLOY,
    DOCKERFILE,
    DSN,
    K8S,
    ROOT,
    TESTDATA,
    Dockerfile,
    collector_configs,
    collector_problems,
    compose,
    config_value,
    defaults,
    dockerignore_excludes,
    isolate_env,
    k8s_serve_config,
    load_yaml,
    manifest,
    port_of,
    same_value,
    toolscore_container,
)
from tests.promql_names import exported_metrics
from toolscore.collector.serve import load_config
from toolscore.collector.telemetry.metrics_table import ATTRIBUTES


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_env(monkeypatch)


def test_every_deploy_yaml_file_parses() -> None:
    files = sorted([*COMPOSE_DIR.rglob("*.y*ml"), *K8S.rglob("*.y*ml")])
    assert len(files) >= 12
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert docs, f"{path} is empty"
        assert all(isinstance(d, dict) for d in docs), path


def test_every_file_compose_mounts_or_builds_from_exists() -> None:
    services = compose()["services"]
    build = services["toolscore"]["build"]
    assert (COMPOSE_DIR / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    sources = [v.split(":")[0] for s in services.values() for v in s.get("volumes", [])]
    binds = [s for s in sources if s.startswith((".", "/"))]
    assert len(binds) >= 6
    for source in binds:
        path = (COMPOSE_DIR / source).resolve()
        assert path.is_relative_to(ROOT), f"compose mounts {source}, outside the repository"
        assert path.exists(), f"compose mounts {source}, missing at {path}"
    named = {s for s in sources if s not in binds}
    assert named <= set(compose()["volumes"])


@pytest.mark.parametrize("where", ["compose", "kubernetes"])
def test_collector_config_uses_only_contrib_components_it_defines(where: str) -> None:
    assert collector_problems(collector_configs()[where], COMPONENTS) == []


@pytest.mark.parametrize("case", sorted(p.name for p in (TESTDATA / "invalid-otelcol").glob("*.yaml")))
def test_collector_check_reports_the_broken_config(case: str) -> None:
    path = TESTDATA / "invalid-otelcol" / case
    expected = path.read_text().splitlines()[0].removeprefix("# problem: ")
    assert collector_problems(load_yaml(path), COMPONENTS) == [expected]


def test_collector_image_is_the_release_whose_components_are_vendored() -> None:
    images = [compose()["services"]["otel-collector"]["image"]]
    images.append(manifest("Deployment", "otel-gateway")["spec"]["template"]["spec"]["containers"][0]["image"])
    assert images == [f"otel/opentelemetry-collector-contrib:{COMPONENTS['version']}"] * 2


def _pipelines_using(config: dict[str, Any], kind: str, component: str) -> set[str]:
    pipelines = config["service"]["pipelines"]
    return {name for name, spec in pipelines.items() if component in spec.get(kind, [])}


def _receiver_on_port(config: dict[str, Any], port: int) -> str:
    found: list[str] = [
        name
        for name, spec in config["receivers"].items()
        for proto in (spec.get("protocols") or {}).values()
        if port_of(proto["endpoint"]) == port
    ]
    assert len(found) == 1, f"receivers on :{port}: {found}"
    return found[0]


def test_scored_spans_come_back_on_a_pipeline_that_does_not_send_to_toolscore(monkeypatch: pytest.MonkeyPatch) -> None:
    env = compose()["services"]["toolscore"]["environment"]
    forwards = {
        "compose": env["TOOLSCORE_FORWARD__ENDPOINT"],
        "kubernetes": k8s_serve_config(monkeypatch).forward.endpoint,
    }
    to_toolscore = {"compose": "otlp/toolscore", "kubernetes": "loadbalancing"}
    for where, config in collector_configs().items():
        assert forwards[where] is not None
        back = _receiver_on_port(config, port_of(forwards[where]))
        inbound = _pipelines_using(config, "exporters", to_toolscore[where])
        assert inbound, where
        assert _pipelines_using(config, "receivers", back).isdisjoint(inbound), f"{where}: spans would loop"


def test_toolscore_defaults_are_the_ports_the_deploy_files_use() -> None:
    config = defaults()
    grpc, http = port_of(config.receiver.grpc_endpoint), port_of(config.receiver.http_endpoint)
    metrics = config.telemetry.prometheus_port
    assert (grpc, http, metrics) == (4317, 4318, 9464)
    exposed = {int(p) for rest in Dockerfile.read(DOCKERFILE).args("EXPOSE") for p in rest.split()}
    assert exposed == {grpc, http, metrics}
    otelcol = collector_configs()
    assert otelcol["compose"]["exporters"]["otlp/toolscore"]["endpoint"] == f"toolscore:{grpc}"
    assert otelcol["kubernetes"]["exporters"]["loadbalancing"]["resolver"]["dns"]["port"] == str(grpc)
    prometheus = load_yaml(COMPOSE_DIR / "prometheus" / "prometheus.yml")
    targets = [
        t for job in prometheus["scrape_configs"] if job["job_name"] == "toolscore" for t in job["static_configs"]
    ]
    assert targets == [{"targets": [f"toolscore:{metrics}"]}]
    container_ports = {p["name"]: p["containerPort"] for p in toolscore_container()["ports"]}
    assert container_ports == {"otlp-grpc": grpc, "otlp-http": http, "metrics": metrics}


def test_image_runs_toolscore_serve_as_a_fixed_non_root_user() -> None:
    dockerfile = Dockerfile.read(DOCKERFILE)
    assert len(dockerfile.stages) >= 2, "multi-stage"
    assert dockerfile.args("ENTRYPOINT") == ['["toolscore", "serve"]']
    (user,) = dockerfile.args("USER")
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) > 0
    pod = manifest("Deployment", "toolscore")["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] == int(uid)
    assert dockerfile.args("FROM", -1)[0].split()[0] in ("python:3.11-slim", "${PYTHON_IMAGE}")
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in DOCKERFILE.read_text()


def test_dockerignore_keeps_the_build_inputs_and_drops_local_state() -> None:
    patterns = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]
    sources = Dockerfile.read(DOCKERFILE).copy_sources()
    assert "pyproject.toml" in sources
    for source in sources:
        assert not dockerignore_excludes(patterns, source), f".dockerignore drops {source}"
    for local in (".venv", ".git", ".toolscore/registry.db", "tests", "collector/__pycache__"):
        assert dockerignore_excludes(patterns, local), local


def _environments(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, str], Path | None]]:
    image = Dockerfile.read(DOCKERFILE).env()
    yield "image", image, None
    yield "compose", {**image, **compose()["services"]["toolscore"]["environment"]}, None
    pod = {v["name"]: v.get("value", DSN) for v in toolscore_container()["env"]}
    yield "kubernetes", {**image, **pod}, K8S / "config" / "serve.yaml"


def test_toolscore_variables_are_real_config_keys_and_take_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    for where, env, file in _environments(monkeypatch):
        toolscore = {k: str(v) for k, v in env.items() if k.startswith("TOOLSCORE_")}
        assert toolscore, where
        with monkeypatch.context() as patch:
            for key, value in toolscore.items():
                patch.setenv(key, value)
            config = load_config(file)
        for key, value in toolscore.items():
            assert same_value(config_value(config, key), value), f"{where}: {key}={value}"


def test_a_misspelled_variable_names_no_config_key() -> None:
    with pytest.raises(KeyError, match="grpc_endpont"):
        config_value(defaults(), "TOOLSCORE_RECEIVER__GRPC_ENDPONT")
    with pytest.raises(KeyError, match="recevier"):
        config_value(defaults(), "TOOLSCORE_RECEVIER__GRPC_ENDPOINT")


def test_prometheus_loads_the_rules_directory_compose_mounts() -> None:
    mounts = dict(v.split(":")[1::-1] for v in compose()["services"]["prometheus"]["volumes"] if v.startswith("."))
    rule_files = load_yaml(COMPOSE_DIR / "prometheus" / "prometheus.yml")["rule_files"]
    matched = []
    for pattern in rule_files:
        directory, _, name = pattern.rpartition("/")
        assert directory in mounts, f"{pattern} is not in a mounted directory"
        matched += glob.glob(str(COMPOSE_DIR / mounts[directory] / name))
    assert DEPLOY / "prometheus" / "rules" / "toolscore.rules.yml" in {Path(m).resolve() for m in matched}


def test_metric_and_label_names_in_the_deploy_files_and_docs_are_ones_toolscore_exposes() -> None:
    texts = [p.read_text() for p in (*COMPOSE_DIR.rglob("*.y*ml"), *K8S.rglob("*.y*ml"), DOCKERFILE)]
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    texts.append(deploy[: deploy.index("## Alerting on regressions")])
    selectors = [s for text in texts for s in re.findall(r"\b(toolscore_[a-z_]+)(?:\{([^}]*)\})?", text)]
    assert len(selectors) >= 5, "docs/deploy.md names the metrics to watch"
    assert {name for name, _ in selectors} <= exported_metrics()
    labels = {(m.group(1), m.group(2)) for _, body in selectors for m in re.finditer(r'(\w+)="([^"]*)"', body)}
    assert labels
    for label, value in sorted(labels):
        spec = next((a for name, a in ATTRIBUTES.items() if name.replace(".", "_") == label), None)
        assert spec is not None, f"no attribute {label}"
        assert spec.values is None or value in spec.values, f"{label}={value!r}"


def test_compose_demo_agents_send_through_the_collector_to_expectations_toolscore_loads() -> None:
    services = compose()["services"]
    loop = shlex.split(services["agents"]["command"][0])
    endpoint = loop[loop.index("--endpoint") + 1]
    assert endpoint == "otel-collector:" + str(
        port_of(collector_configs()["compose"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    )
    db = loop[loop.index("--db") + 1]
    assert db == services["toolscore"]["environment"].get(
        "TOOLSCORE_SCORE_STORE__PATH", Dockerfile.read(DOCKERFILE).env()["TOOLSCORE_SCORE_STORE__PATH"]
    )
    assert "toolscore-data:" + str(Path(db).parent) in services["agents"]["volumes"]
    assert (DEPLOY / "expectations" / "demo.yaml").is_file()
    assert "../expectations:/etc/toolscore/expectations:ro" in services["toolscore"]["volumes"]


def _datasource_refs(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        if "datasource" in node:
            yield node["datasource"]
        for value in node.values():
            yield from _datasource_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _datasource_refs(value)


def test_grafana_provisions_the_dashboard_and_every_datasource_it_names() -> None:
    grafana = compose()["services"]["grafana"]
    mounts = {target: source for source, target, *_ in (v.split(":") for v in grafana["volumes"])}
    provisioning = COMPOSE_DIR / mounts["/etc/grafana/provisioning"]
    (provider,) = load_yaml(provisioning / "dashboards" / "dashboards.yaml")["providers"]
    dashboards = [t for t in mounts if t.startswith(provider["options"]["path"] + "/")]
    assert grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] in dashboards
    datasources = load_yaml(provisioning / "datasources" / "datasources.yaml")["datasources"]
    assert {"url": "http://prometheus:9090", "type": "prometheus"}.items() <= datasources[0].items()
    uids = {d["uid"] for d in datasources}
    for target in dashboards:
        dashboard = json.loads((COMPOSE_DIR / mounts[target]).read_text())
        templating = dashboard.get("templating", {}).get("list", [])
        variables = {v["name"] for v in templating if v.get("type") == "datasource"}
        for ref in _datasource_refs(dashboard):
            uid = ref.get("uid") if isinstance(ref, dict) else ref
            if isinstance(uid, str) and uid.startswith("$"):
                assert uid.strip("${}") in variables, f"{target}: datasource variable {uid} undefined"
            elif uid is not None and uid != "-- Grafana --":
                assert uid in uids, f"{target}: datasource {uid!r} is not provisioned ({sorted(uids)})"
