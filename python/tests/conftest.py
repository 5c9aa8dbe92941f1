"""Fixtures of the ribbon package's tests (the Spark build's are in spark_fixtures.py).

The tests compare against the `ribbon` command (RIBBON_CLI, set by ctest) and load the C ABI
library (RIBBON_READER_LIBRARY, or the installed package's). Tests that need the command skip,
saying why, when it is not given.
"""

import os
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cli():
    """A function running `ribbon ARGS...`, returning its CompletedProcess (stdout as bytes)."""
    path = os.environ.get("RIBBON_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("RIBBON_CLI (the ribbon command) is not given; ctest sets it")

    def run(*args, check=True, stdin=None, env=None):
        environment = None if env is None else {**os.environ, **env}
        return subprocess.run([path, *map(str, args)], check=check, capture_output=True, input=stdin,
                              env=environment)

    return run


@pytest.fixture
def random_u64():
    """n distinct-ish random uint64 keys from a fixed seed."""

    def make(n, seed=1):
        return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)

    return make


@pytest.fixture
def random_words():
    """n random byte strings (lengths 0..24, any bytes except \\n and \\r, which the CLI's
    lines format cuts at) from a fixed seed."""

    def make(n, seed=2):
        rng = np.random.default_rng(seed)
        lengths = rng.integers(0, 25, size=n)
        out = []
        for length in lengths:
            b = rng.integers(0, 256, size=length, dtype=np.uint8)
            b[(b == 10) | (b == 13)] = 11
            out.append(bytes(b))
        return out

    return make
