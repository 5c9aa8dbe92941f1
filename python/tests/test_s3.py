"""Builds whose output and parts are on an S3-compatible server (moto, in server mode on
127.0.0.1, checking credentials): byte-identical to `ribbon build`, with the in-process engine
and with Spark (a task attempt that fails included); nothing left behind; a bad URI, a missing
bucket and wrong credentials refused before any work."""

from __future__ import annotations

import os
import urllib.parse

import numpy as np
import pytest

import ribbon
import ribbon.spark
from ribbon import distributed as dist
from spark_fixtures import cli_build, random_strings, random_u64, s3, spark  # noqa: F401

pytestmark = pytest.mark.s3

SMALL = dict(width=32, shard_size=1024, range_keys=2500, one_place_keys=300)
CLI_SMALL = ("-w", "32", "--shard-size", "1024")


def test_local_engine_writes_to_s3_what_the_cli_writes(s3, tmp_path, monkeypatch):
    keys = random_u64(40000, seed=31)
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.access_key)  # the URI form: the usual variables
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret_key)
    stats = dist.build(np.array_split(keys, 5), s3.uri("local/k.ribbon"), key_kind="u64",
                       **SMALL)
    assert len([l for l in stats.layers if not l["replanned"]]) >= 2
    assert s3.read("local/k.ribbon") == expected
    assert s3.objects() == [f"{s3.bucket}/local", f"{s3.bucket}/local/k.ribbon"]


def test_bad_destinations_are_refused_before_any_work(s3, monkeypatch):
    keys = [np.arange(10, dtype=np.uint64)]
    with pytest.raises(ValueError, match="cannot write 'nope://x/y.ribbon'"):
        dist.build(keys, "nope://x/y.ribbon", key_kind="u64")
    with pytest.raises(ValueError, match="cannot write 's3://b/y/z'") as refused:
        dist.build(keys, "s3://user:secret/@b/y/z", key_kind="u64")  # a malformed URI
    assert "secret" not in str(refused.value)
    with pytest.raises(OSError, match="cannot write s3://no-such-bucket/y.ribbon"):
        dist.build(keys, "no-such-bucket/y.ribbon", key_kind="u64", filesystem=s3.filesystem())
    wrong = s3.filesystem(access_key="AKIAWRONGWRONG", secret_key="wrong")
    with pytest.raises(OSError, match="cannot write s3://ribbon-test/y.ribbon: .*ACCESS_DENIED"):
        dist.build(keys, f"{s3.bucket}/y.ribbon", key_kind="u64", filesystem=wrong)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(OSError, match=r"cannot write s3://ribbon-test/y.ribbon"):
        dist.build(keys, s3.uri("y.ribbon"), key_kind="u64")  # no credentials at all
    assert s3.objects() == [] or all("y.ribbon" not in o for o in s3.objects())


@pytest.mark.spark
def test_spark_build_to_s3_equals_the_cli_after_a_failed_task(spark, s3, tmp_path):
    import pandas as pd

    keys = random_u64(40000, seed=32)
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)
    shuffled = np.random.default_rng(3).permutation(keys).astype(np.int64)
    df = spark.createDataFrame(pd.DataFrame({"k": shuffled})).repartition(7)
    marker = str(tmp_path / "fault")
    # The URI form with its credentials (executors get them with the file system).
    secret = urllib.parse.quote(s3.secret_key, safe="")
    uri = s3.uri("spark/k.ribbon").replace("s3://", f"s3://{s3.access_key}:{secret}@")
    ribbon.spark.build(df, "k", uri, _fail_first_attempt=[(0, 2, marker)], **SMALL)
    assert os.path.exists(marker)
    assert s3.read("spark/k.ribbon") == expected
    strings = random_strings(20000, seed=33)
    expected = cli_build(strings, str(tmp_path), *CLI_SMALL, "--fpr", "0.001")
    df = spark.createDataFrame(pd.DataFrame({"s": [k.decode() for k in strings]}), "s string")
    ribbon.spark.build(df.repartition(3), "s", "ribbon-test/spark/s.ribbon", fpr=0.001,
                       filesystem=s3.filesystem(), **SMALL)
    assert s3.read("spark/s.ribbon") == expected
    assert [o for o in s3.objects() if o.startswith(f"{s3.bucket}/spark/")] == [
        f"{s3.bucket}/spark/k.ribbon", f"{s3.bucket}/spark/s.ribbon"]
