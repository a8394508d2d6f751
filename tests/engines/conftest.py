"""The engines the engine tests score on, each started once for a test module, small (one
or two CPUs)."""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

import pytest

from tests.programs import need


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    need("java", "default-jre-headless")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python workers: ours
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("flask-predict-tests")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="module")
def ray() -> Iterator[Any]:
    import ray as ray_module

    ray_module.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20,
                    log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray_module
    ray_module.shutdown()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1",
                      memory_limit="3GiB") as cluster, Client(cluster) as client:
        yield client
