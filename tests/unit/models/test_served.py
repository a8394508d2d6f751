"""What a loaded version knows from its predictor's class, decided once at load."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from flask_predict import ModelMetadata, Predictor, Signature, TensorSpec
from flask_predict.models.served import LoadedVersion
from flask_predict.types import ModelSpec, Tensor


class Tensors(Predictor):
    """Answers through the tensors door: a matrix of numbers may reach it."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Tensors:
        return cls()

    def signature(self) -> Signature:
        return Signature(inputs=(TensorSpec("x", "FP64", (-1, 2)),),
                         outputs=(TensorSpec("y", "FP64", (-1,)),))

    def predict_tensors(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        return {"y": np.asarray(inputs["x"]).sum(axis=1)}


class Instances(Predictor):
    """Overrides ``predict``: its matrix door always declines."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Instances:
        return cls()

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        return instances


class OwnMatrix(Instances):
    """Overrides both: its own matrix door decides."""

    def predict_matrix(self, matrix: Tensor) -> list[Any] | None:
        return matrix.tolist()


def loaded(predictor: Predictor) -> LoadedVersion:
    return LoadedVersion(ModelSpec("m", "/nowhere"), 1, predictor, ModelMetadata("m", {}),
                         "/nowhere/1")


def test_whether_a_version_takes_a_matrix_is_known_at_load() -> None:
    assert loaded(Tensors()).takes_matrix
    assert not loaded(Instances()).takes_matrix
    assert loaded(OwnMatrix()).takes_matrix
    # the one answer the matrix door would have given the class that declines
    assert Instances().predict_matrix(np.ones((1, 2))) is None
