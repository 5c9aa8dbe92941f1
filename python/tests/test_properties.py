"""Property tests (hypothesis): random key sets with duplicates, sizes 0 to 10^4."""

import os
import tempfile

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ribbon

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def integer_key_sets(draw):
    """Up to 10^4 uint64 keys, with repeats drawn from the same keys."""
    n = draw(st.integers(0, 10_000))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    distinct = rng.integers(0, 2**64, size=max(1, n // 2 + 1), dtype=np.uint64)
    return rng.choice(distinct, size=n) if n else np.array([], np.uint64)


@given(keys=integer_key_sets(), bits=st.integers(1, 16), width=st.sampled_from([32, 64, 128]),
       seed=st.integers(0, 2**64 - 1))
@SETTINGS
def test_integer_sets(keys, bits, width, seed):
    f = ribbon.build(keys, bits=bits, width=width, seed=seed)
    assert f.contains(keys).all()  # no false negatives, duplicates or not
    assert len(f) in (len(keys), len(np.unique(keys)))
    # The same file from every input form and from the bulk builder fed in pieces.
    image = f.to_bytes()
    assert ribbon.build(pa.array(keys, pa.uint64()), bits=bits, width=width, seed=seed).to_bytes() == image
    with tempfile.TemporaryDirectory() as tmp, ribbon.BulkBuilder("u64", bits=bits, width=width,
                                                                  seed=seed) as b:
        for part in np.array_split(keys, 3):
            b.add(part)
        b.finish(os.path.join(tmp, "f.ribbon"))
        assert ribbon.load(os.path.join(tmp, "f.ribbon")).to_bytes() == image


@given(words=st.lists(st.binary(max_size=12), max_size=2000), bits=st.integers(1, 12))
@SETTINGS
def test_byte_string_sets(words, bits):
    words = words + words[: len(words) // 3]  # repeats
    f = ribbon.build(words, bits=bits, key_kind="bytes")
    assert f.contains(words).all() if words else len(f) == 0
    assert ribbon.build(pa.array(words, pa.binary()), bits=bits, key_kind="bytes").to_bytes() == f.to_bytes()
    assert np.array_equal(ribbon.hash_keys(words, key_kind="bytes"),
                          ribbon.hash_keys(pa.array(words, pa.large_binary())))
