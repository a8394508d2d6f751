"""The KServe serving runtime (deploy/kserve/clusterservingruntime.yaml) and the
InferenceService that selects it by model format, validated offline against KServe's
published CRD schemas (tests/data/kserve: the openAPIV3Schema of each CRD, as KServe's
config/crd/full publishes them), strictly: a field the schema does not name is an error, as
``kubectl apply --validate=strict`` makes it."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KSERVE = ROOT / "deploy" / "kserve"
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "kserve"


def strict(schema: Any) -> Any:
    """*schema* with every object that lists its properties closed to others (unless it
    keeps unknown fields on purpose, ``x-kubernetes-preserve-unknown-fields``)."""
    if isinstance(schema, dict):
        schema = {key: strict(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    return schema


def validator(name: str) -> jsonschema.Draft7Validator:
    with gzip.open(SCHEMAS / name) as file:
        schema = json.load(file)["schema"]
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema.Draft7Validator(strict(schema))


def load(name: str) -> dict[str, Any]:
    (document,) = [doc for doc in yaml.safe_load_all((KSERVE / name).read_text()) if doc]
    assert isinstance(document, dict)
    return document


RUNTIME = validator("clusterservingruntimes.v1alpha1.json.gz")
SERVICE = validator("inferenceservices.v1beta1.json.gz")


def errors(check: jsonschema.Draft7Validator, document: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in check.iter_errors(document)]


def test_runtime_matches_kserves_schema() -> None:
    runtime = load("clusterservingruntime.yaml")
    assert (runtime["apiVersion"], runtime["kind"]) == ("serving.kserve.io/v1alpha1",
                                                        "ClusterServingRuntime")
    assert errors(RUNTIME, runtime) == []
    spec = runtime["spec"]
    assert {f["name"] for f in spec["supportedModelFormats"]} == {"sklearn", "xgboost",
                                                                  "tensorflow"}
    assert all(f["autoSelect"] for f in spec["supportedModelFormats"])
    assert spec["protocolVersions"] == ["v1", "v2", "grpc-v2"]
    (container,) = spec["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["AIP_STORAGE_URI"] == "/mnt/models"  # the storage initializer's folder
    assert env["MODEL_NAME"] == "{{.Name}}"
    (port,) = container["ports"]
    assert int(env["PORT"]) == port["containerPort"] == \
        int(spec["annotations"]["prometheus.kserve.io/port"])


def test_inference_service_selects_the_runtime_by_format() -> None:
    service = load("inferenceservice-runtime.yaml")
    runtime = load("clusterservingruntime.yaml")
    assert errors(SERVICE, service) == []
    predictor = service["spec"]["predictor"]
    model = predictor["model"]
    assert "runtime" not in model  # chosen by format: autoSelect
    formats = {f["name"] for f in runtime["spec"]["supportedModelFormats"]}
    assert model["modelFormat"]["name"] in formats
    assert model["protocolVersion"] in runtime["spec"]["protocolVersions"]
    (container,) = runtime["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert predictor["containerConcurrency"] == int(env["WEB_CONCURRENCY"])


@pytest.mark.parametrize("change", ["unknown field", "wrong type"])
def test_the_validation_catches_mistakes(change: str) -> None:
    runtime = copy.deepcopy(load("clusterservingruntime.yaml"))
    if change == "unknown field":
        runtime["spec"]["supportedModelFormat"] = runtime["spec"].pop("supportedModelFormats")
    else:
        runtime["spec"]["supportedModelFormats"][0]["priority"] = "high"
    assert errors(RUNTIME, runtime)
    service = copy.deepcopy(load("inferenceservice-runtime.yaml"))
    service["spec"]["predictor"]["model"]["modelFormats"] = {"name": "sklearn"}
    assert errors(SERVICE, service)
