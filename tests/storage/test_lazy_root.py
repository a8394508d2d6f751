"""The lazy tier over a bucket root, on the S3 and Cloud Storage emulators: each model's
folder mirrored on its first request, then served from the mirror; a name the bucket does
not hold answered 404, and not asked of the store again during the back-off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flask_predict.errors import ModelNotFound
from flask_predict.models.lazy import LazyTier
from flask_predict.models.plugins import load_predictor_class
from flask_predict.settings.lazy import LazySettings
from tests.lazy_models import linear_answer, train_linear
from tests.storage_servers import Bucket

ROW = [1.0, 2.0, 3.0]


def test_models_load_from_a_bucket_root(bucket: Bucket, tmp_path: Path) -> None:
    for seed in (3, 5):
        bucket.upload(train_linear(tmp_path / f"m{seed}", seed), f"root/m{seed}")
    lazy = LazyTier(LazySettings(bucket.uri("root"), 10**9, 30.0), load_predictor_class)
    for seed in (3, 5):
        loaded = lazy.model(f"m{seed}").default()
        outputs = loaded.predictor.predict_tensors({"input-0": np.array([ROW])})
        assert float(next(iter(outputs.values()))[0]) == linear_answer(seed, ROW)
        assert loaded.spec.base_path == bucket.uri(f"root/m{seed}")
    with pytest.raises(ModelNotFound):
        lazy.model("absent")
    bucket.upload(train_linear(tmp_path / "absent", 7), "root/absent")
    with pytest.raises(ModelNotFound):  # the back-off: not asked of the store again yet
        lazy.model("absent")
