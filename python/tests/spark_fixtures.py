"""Helpers of the distributed-build tests: the `ribbon` command to compare against, key
files in its formats, and one local Spark session for the whole test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ribbon_cli() -> str:
    """The `ribbon` command: $RIBBON_CLI (ctest sets it), else build*/tools/ribbon."""
    path = os.environ.get("RIBBON_CLI")
    if path:
        return path
    for name in sorted(os.listdir(REPO)):
        candidate = os.path.join(REPO, name, "tools", "ribbon")
        if name.startswith("build") and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("ribbon")
    if not found:
        pytest.skip("no ribbon command (set RIBBON_CLI)")
    return found


def write_keys(keys, path: str) -> str:
    """Integer keys as a u64 file, byte strings as lines (no key may hold b"\\n")."""
    if isinstance(keys, np.ndarray):
        keys.astype("<u8").tofile(path)
    else:
        with open(path, "wb") as out:
            out.write(b"".join(k + b"\n" for k in keys))
    return path


def cli_build(keys, directory: str, *options: str) -> bytes:
    """The bytes `ribbon build` writes for these keys and options."""
    fmt = "u64" if isinstance(keys, np.ndarray) else "lines"
    source = write_keys(keys, os.path.join(directory, "cli-keys." + fmt))
    out = os.path.join(directory, "cli.ribbon")
    subprocess.run(
        [ribbon_cli(), "build", "-i", source, "--format", fmt, "-o", out, "--quiet", *options],
        check=True,
    )
    with open(out, "rb") as f:
        return f.read()


def cli_query(filter_path: str, keys, directory: str) -> np.ndarray:
    """`ribbon query`'s answer for each key (True: printed as a possible member)."""
    fmt = "u64" if isinstance(keys, np.ndarray) else "lines"
    source = write_keys(keys, os.path.join(directory, "probes." + fmt))
    run = subprocess.run(
        [ribbon_cli(), "query", filter_path, "-i", source, "--format", fmt],
        stdout=subprocess.PIPE,
        check=False,
    )
    assert run.returncode in (0, 1), run.returncode
    printed = run.stdout.split(b"\n")[:-1]
    if fmt == "u64":
        positive = set(int(line) for line in printed)
        return np.array([int(k) in positive for k in keys])
    positive = set(printed)
    return np.array([k in positive for k in keys])


def random_u64(count: int, seed: int) -> np.ndarray:
    """Distinct pseudo-random 64-bit keys."""
    keys = np.unique(np.random.default_rng(seed).integers(0, 2**64, count, dtype=np.uint64))
    return np.random.default_rng(seed + 1).permutation(keys)


def random_strings(count: int, seed: int) -> list:
    """Distinct byte strings of 0..30 bytes without b"\\n" or b"\\r" (lines files)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, count)
    keys = {b"%d:" % i + bytes(rng.integers(32, 127, n, dtype=np.uint8)) for i, n in enumerate(lengths)}
    return sorted(keys)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session with two cores and up to 4 attempts per task."""
    pyspark = pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    # The executors' Python workers run this interpreter (numpy, pyarrow, ribbon on its path).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("ribbon-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.default.parallelism", "4")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    assert pyspark.__version__
    yield session
    session.stop()


@pytest.fixture(scope="session")
def jar(spark):
    """ribbon.jar added to the session (then engine="auto" routes layer 0 in the JVM too);
    the tests that need it skip where the jar was not built, but fail where
    RIBBON_TEST_REQUIRE_JAR is set (CI's installed package, whose jar must be whole).
    Returns ribbon.spark_jvm."""
    import ribbon.spark_jvm

    try:
        ribbon.spark_jvm.jar_path()
    except FileNotFoundError as e:
        if os.environ.get("RIBBON_TEST_REQUIRE_JAR"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    ribbon.spark_jvm.add_jar(spark, routing=True)
    return ribbon.spark_jvm


class S3Server:
    """An S3-compatible server (moto in server mode) on 127.0.0.1 that checks credentials:
    a bucket `ribbon-test` and an IAM user whose keys may do anything."""

    bucket = "ribbon-test"

    def __init__(self, directory: str):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"127.0.0.1:{self.port}"
        # Requests after the first four (bucket, user, policy, key) need valid credentials.
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="4")
        server = os.path.join(os.path.dirname(sys.executable), "moto_server")
        with open(os.path.join(directory, "moto.log"), "wb") as log:
            self.process = subprocess.Popen(
                [server, "-H", "127.0.0.1", "-p", str(self.port)], env=env, stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_until_up()
        self.access_key, self.secret_key = self._provision()

    def _wait_until_up(self) -> None:
        import socket
        import time

        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto_server did not start")

    def _provision(self):
        import boto3

        kw = dict(endpoint_url=f"http://{self.endpoint}", region_name="us-east-1",
                  aws_access_key_id="setup", aws_secret_access_key="setup")
        boto3.client("s3", **kw).create_bucket(Bucket=self.bucket)
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="ribbon")
        iam.put_user_policy(UserName="ribbon", PolicyName="all", PolicyDocument=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}'))
        key = iam.create_access_key(UserName="ribbon")["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def filesystem(self, access_key=None, secret_key=None):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=access_key or self.access_key, secret_key=secret_key or self.secret_key,
            endpoint_override=self.endpoint, scheme="http", region="us-east-1",
        )

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}?endpoint_override={self.endpoint}&scheme=http&region=us-east-1"

    def objects(self) -> list:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.bucket, recursive=True)
        return sorted(info.path for info in self.filesystem().get_file_info(selector))

    def read(self, key: str) -> bytes:
        with self.filesystem().open_input_stream(f"{self.bucket}/{key}") as f:
            return f.read()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A running S3Server for the session (skips without moto[server])."""
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    server = S3Server(str(tmp_path_factory.mktemp("s3")))
    yield server
    server.stop()
