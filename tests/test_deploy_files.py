"""The deploy files (image, compose stack, Kubernetes manifests) agree with toolscore and with each other.

Static checks only: no Docker, nothing pulled. Toolscore's side comes from the real code (ServeConfig and
its loader, the metric table); the Collector's side from the vendored component list of the pinned
otelcol-contrib release (tests/testdata/deploy/otelcol-contrib-components.yaml).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy_files import (
    Dockerfile,
    collector_problems,
    config_value,
    dockerignore_excludes,
    load_yaml,
    port_of,
    prometheus_metric_names,
    same_value,
)
from toolscore.collector.registry.files import load_file
from toolscore.collector.serve.config import ServeConfig, load_config
from toolscore.collector.telemetry.metrics_table import ATTRIBUTES

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
K8S = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
TESTDATA = Path(__file__).parent / "testdata" / "deploy"
COMPONENTS = load_yaml(TESTDATA / "otelcol-contrib-components.yaml")
DSN = "postgresql://toolscore@postgres.example/toolscore"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the variables a test sets reach the config loader."""
    for name in list(os.environ):
        if name.startswith(("TOOLSCORE_", "OTEL_")):
            monkeypatch.delenv(name)


def compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(COMPOSE_DIR / "docker-compose.yml")
    return data


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in load_yaml(K8S / "kustomization.yaml")["resources"]:
        docs.extend(d for d in yaml.safe_load_all((K8S / name).read_text()) if d)
    return docs


def manifest(kind: str, name: str) -> dict[str, Any]:
    found = [m for m in manifests() if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} manifests"
    return found[0]


def toolscore_container() -> dict[str, Any]:
    container: dict[str, Any] = manifest("Deployment", "toolscore")["spec"]["template"]["spec"]["containers"][0]
    return container


def k8s_serve_config(monkeypatch: pytest.MonkeyPatch) -> ServeConfig:
    """deploy/kubernetes/config/serve.yaml as a replica loads it: the image's env, the pod's env, the file."""
    for key, value in Dockerfile.read(DOCKERFILE).env().items():
        monkeypatch.setenv(key, value)
    for var in toolscore_container()["env"]:
        monkeypatch.setenv(var["name"], var.get("value", DSN))
    return load_config(K8S / "config" / "serve.yaml")


def collector_configs() -> dict[str, dict[str, Any]]:
    return {
        "compose": load_yaml(COMPOSE_DIR / "otelcol" / "config.yaml"),
        "kubernetes": load_yaml(K8S / "otelcol" / "config.yaml"),
    }


def defaults() -> ServeConfig:
    return load_config()


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


def test_every_file_the_kustomization_lists_exists() -> None:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    listed = list(kustomization["resources"])
    generated = set()
    for generator in kustomization["configMapGenerator"]:
        generated.add(generator["name"])
        listed += [f.split("=", 1)[-1] for f in generator["files"]]
    for name in listed:
        assert (K8S / name).is_file(), f"kustomization lists {name}"
    volumes = [v for m in manifests() if m["kind"] == "Deployment" for v in m["spec"]["template"]["spec"]["volumes"]]
    assert {v["configMap"]["name"] for v in volumes if "configMap" in v} == generated


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
    assert otelcol["kubernetes"]["exporters"]["loadbalancing"]["resolver"]["dns"]["port"] == grpc
    prometheus = load_yaml(COMPOSE_DIR / "prometheus" / "prometheus.yml")
    targets = [
        t for job in prometheus["scrape_configs"] if job["job_name"] == "toolscore" for t in job["static_configs"]
    ]
    assert targets == [{"targets": [f"toolscore:{metrics}"]}]
    container_ports = {p["name"]: p["containerPort"] for p in toolscore_container()["ports"]}
    assert container_ports == {"otlp-grpc": grpc, "otlp-http": http, "metrics": metrics}


def test_probes_ask_healthz_and_readyz_on_the_http_port() -> None:
    container = toolscore_container()
    http = port_of(defaults().receiver.http_endpoint)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == http
    healthcheck = Dockerfile.read(DOCKERFILE).args("HEALTHCHECK")
    assert len(healthcheck) == 1
    assert f"127.0.0.1:{http}/healthz" in healthcheck[0]


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


def test_kubernetes_replicas_share_a_postgres_registry_and_listen_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    config = k8s_serve_config(monkeypatch)
    assert config.registry.store.type == "postgres"
    assert config.registry.store.dsn == DSN
    assert config.receiver.grpc_endpoint.startswith("0.0.0.0:")
    assert config.receiver.http_endpoint.startswith("0.0.0.0:")
    assert config.telemetry.prometheus_host == "0.0.0.0"
    for path in config.registry.files:
        mount = next(m for m in toolscore_container()["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
        assert mount["name"] == "expectations"
        assert load_file(K8S / "expectations" / Path(path).name)
    gateway = manifest("Service", "otel-gateway")
    assert config.forward.endpoint is not None
    assert config.forward.endpoint.startswith(f"http://{gateway['metadata']['name']}:")
    assert port_of(config.forward.endpoint) in {p["port"] for p in gateway["spec"]["ports"]}


def test_gateway_routes_by_trace_id_to_the_headless_service_of_the_replicas() -> None:
    exporter = collector_configs()["kubernetes"]["exporters"]["loadbalancing"]
    assert exporter["routing_key"] == "traceID"
    service = manifest("Service", "toolscore-headless")
    assert service["spec"]["clusterIP"] == "None"
    namespace = load_yaml(K8S / "kustomization.yaml")["namespace"]
    assert exporter["resolver"]["dns"]["hostname"] == f"toolscore-headless.{namespace}.svc.cluster.local"
    deployment = manifest("Deployment", "toolscore")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["replicas"] >= 2
    for selector in (service["spec"]["selector"], manifest("PodDisruptionBudget", "toolscore")["spec"]["selector"]):
        assert (selector.get("matchLabels") or selector).items() <= pod_labels.items()


def test_termination_grace_outlasts_prestop_drain_and_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    default_settle_s = defaults().pipeline.settle_ms / 1000
    config = k8s_serve_config(monkeypatch)
    pod = manifest("Deployment", "toolscore")["spec"]["template"]["spec"]
    sleep = pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep"
    drain = float(sleep[1]) + config.shutdown_grace_s + config.pipeline.settle_ms / 1000
    assert pod["terminationGracePeriodSeconds"] > drain
    stop_grace = compose()["services"]["toolscore"]["stop_grace_period"]
    compose_grace = float(compose()["services"]["toolscore"]["environment"].get("TOOLSCORE_SHUTDOWN_GRACE_S", 10))
    assert float(stop_grace.removesuffix("s")) > compose_grace + default_settle_s


def test_every_container_has_resource_requests_and_drops_privileges() -> None:
    for deployment in (m for m in manifests() if m["kind"] == "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        for container in spec["containers"]:
            assert {"cpu", "memory"} <= set(container["resources"]["requests"])
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_prometheus_loads_the_rules_directory_compose_mounts() -> None:
    mounts = dict(v.split(":")[1::-1] for v in compose()["services"]["prometheus"]["volumes"] if v.startswith("."))
    rule_files = load_yaml(COMPOSE_DIR / "prometheus" / "prometheus.yml")["rule_files"]
    matched = []
    for pattern in rule_files:
        directory, _, name = pattern.rpartition("/")
        assert directory in mounts, f"{pattern} is not in a mounted directory"
        matched += glob.glob(str(COMPOSE_DIR / mounts[directory] / name))
    assert DEPLOY / "prometheus" / "rules" / "toolscore.rules.yml" in {Path(m).resolve() for m in matched}


def test_metric_and_label_names_in_the_deploy_files_and_readme_are_ones_toolscore_exposes() -> None:
    texts = [p.read_text() for p in (*COMPOSE_DIR.rglob("*.y*ml"), *K8S.rglob("*.y*ml"), DOCKERFILE)]
    readme = (ROOT / "README.md").read_text()
    texts.append(readme[readme.index("## Deploy\n") : readme.index("### Alerting on regressions")])
    selectors = [s for text in texts for s in re.findall(r"\b(toolscore_[a-z_]+)(?:\{([^}]*)\})?", text)]
    assert len(selectors) >= 5, "the README's Deploy section names the metrics to watch"
    assert {name for name, _ in selectors} <= prometheus_metric_names()
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
