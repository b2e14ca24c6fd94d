"""The Kubernetes manifests (deploy/kubernetes) agree with toolscore and with each other.

Static checks only: no cluster, nothing pulled. The replicas' config file goes through the real loader
with the image's and the pod's variables, as a replica would load it; the probes, ports and grace period
are compared with what that config makes toolscore do.
"""

from __future__ import annotations

import pytest

from tests.deploy_files import (
    DOCKERFILE,
    DSN,
    K8S,
    Dockerfile,
    collector_configs,
    compose,
    defaults,
    isolate_env,
    k8s_serve_config,
    load_yaml,
    manifest,
    manifests,
    port_of,
    toolscore_container,
)
from toolscore.collector.registry import load_paths


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_env(monkeypatch)


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


def test_kubernetes_replicas_share_a_postgres_registry_and_listen_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    config = k8s_serve_config(monkeypatch)
    assert config.registry.store.type == "postgres"
    assert config.registry.store.dsn == DSN
    assert config.receiver.grpc_endpoint.startswith("0.0.0.0:")
    assert config.receiver.http_endpoint.startswith("0.0.0.0:")
    assert config.telemetry.prometheus_host == "0.0.0.0"
    (path,) = config.registry.files  # the mounted ConfigMap's directory
    (mount,) = [m for m in toolscore_container()["volumeMounts"] if m["mountPath"] == path.rstrip("/")]
    assert mount["name"] == "expectations"
    assert load_paths([K8S / "expectations"])
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


def _seconds(duration: str) -> float:
    return float(duration.removesuffix("s")) if duration.endswith("s") else float(duration.removesuffix("m")) * 60


def test_gateway_re_routes_what_a_departed_pod_can_no_longer_take() -> None:
    """The loadbalancing exporter's own queue and retry (off by default) send a failed batch through the ring
    again, to the pod that owns its traces once the resolver has dropped the departed one. A queue per pod
    would take the batch as delivered, so its failure never came back up, and would be lost with the pod."""
    exporter = collector_configs()["kubernetes"]["exporters"]["loadbalancing"]
    per_pod = exporter["protocol"]["otlp"]
    assert exporter["sending_queue"]["enabled"] is True
    assert exporter["retry_on_failure"]["enabled"] is True
    assert per_pod["sending_queue"]["enabled"] is False
    assert per_pod["retry_on_failure"]["enabled"] is True, "a full toolscore queue asks for a retry (RetryInfo)"
    pod_retry = _seconds(per_pod["retry_on_failure"]["max_elapsed_time"])
    resolve = _seconds(exporter["resolver"]["dns"]["interval"])
    assert _seconds(exporter["retry_on_failure"]["max_elapsed_time"]) > pod_retry + resolve, (
        "the per-pod retry gives up, and the resolver drops the pod, while the batch can still be re-routed"
    )


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
