"""ribbon.build, queries, files: checked against the CLI and against first principles."""

import math
import os
import pickle

import numpy as np
import pyarrow as pa
import pytest

import ribbon


def cli_build(cli, tmp_path, name, data, fmt, *options):
    """Builds with `ribbon build` from `data` (bytes of a u64 or lines file); returns the file bytes."""
    src = tmp_path / f"{name}.in"
    src.write_bytes(data)
    out = tmp_path / f"{name}.ribbon"
    cli("build", "-i", src, "--format", fmt, "-o", out, "--quiet", *options)
    return out.read_bytes()


# ---- every key positive --------------------------------------------------------------------


@pytest.mark.parametrize("width", [32, 64, 128])
def test_every_numpy_key_is_positive(random_u64, width):
    keys = random_u64(20000)
    f = ribbon.build(keys, width=width)
    answers = f.contains(keys)
    assert answers.dtype == np.bool_ and answers.shape == keys.shape
    assert answers.all()
    assert len(f) == len(keys)


def test_every_string_key_is_positive(random_words):
    words = random_words(5000)
    for keys in (words, pa.array(words, pa.binary()), pa.array(words, pa.large_binary())):
        f = ribbon.build(keys)
        assert f.contains(words).all()
        assert all(w in f for w in words[:100])


def test_integer_inputs_of_every_kind_agree(random_u64):
    keys = random_u64(3000) >> np.uint64(33)  # fits in int32 too
    reference = ribbon.build(keys).to_bytes()
    for other in (
        keys.astype(np.int64),
        keys.astype(np.uint32),
        np.repeat(keys, 2)[::2],  # strided view
        [int(k) for k in keys],
        pa.array(keys),
        pa.chunked_array([keys[:1000], keys[1000:]]),
        pa.array(keys.astype(np.int32)),
    ):
        assert ribbon.build(other).to_bytes() == reference


def test_str_keys_are_their_utf8_bytes():
    words = ["alice", "bob", "Zoë", "日本", ""]
    as_bytes = [w.encode() for w in words]
    f = ribbon.build(words)
    assert f.to_bytes() == ribbon.build(as_bytes).to_bytes()
    assert f.to_bytes() == ribbon.build(pa.array(words)).to_bytes()
    assert f.to_bytes() == ribbon.build(np.array(words)).to_bytes()
    assert f.to_bytes() == ribbon.build(pa.array(words, pa.large_string())).to_bytes()
    assert f.contains(as_bytes).all() and "Zoë" in f


def test_sliced_and_chunked_arrow_strings(random_words):
    words = random_words(4000)
    array = pa.array(words, pa.binary())
    sliced = array.slice(1000, 2000)
    assert ribbon.build(sliced).to_bytes() == ribbon.build(words[1000:3000]).to_bytes()
    chunked = pa.chunked_array([array.slice(0, 1500), array.slice(1500)])
    assert ribbon.build(chunked).to_bytes() == ribbon.build(words).to_bytes()


# ---- FPR -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [4, 8])
def test_fpr_within_5_sigma(bits):
    keys = np.arange(0, 200000, dtype=np.uint64) * np.uint64(2)  # even numbers
    probes = np.arange(0, 1000000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd: none in
    f = ribbon.build(keys, bits=bits)
    positives = int(f.contains(probes).sum())
    p = 2.0**-bits
    assert f.fpr == pytest.approx(p)
    sigma = math.sqrt(len(probes) * p * (1 - p))
    assert abs(positives - len(probes) * p) <= 5 * sigma, (positives, len(probes) * p)


# ---- the CLI's bytes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options,cli_options",
    [
        ({}, []),
        ({"width": 128, "seed": 7, "bits": 11}, ["-w", "128", "--seed", "7", "--bits", "11"]),
        ({"fpr": 0.01, "width": 32}, ["--fpr", "0.01", "-w", "32"]),
        ({"variant": "standard"}, ["--variant", "standard"]),
        ({"variant": "homogeneous", "threads": 1}, ["--variant", "homogeneous", "--threads", "1"]),
        ({"threshold_codes": "2-bit"}, ["--threshold-codes", "2-bit"]),
        ({"threshold_codes": "1+-bit", "width": 32}, ["--threshold-codes", "1+-bit", "-w", "32"]),
        ({"threshold_codes": "auto", "width": 32}, ["-w", "32"]),
    ],
)
def test_u64_build_matches_cli(cli, tmp_path, random_u64, options, cli_options):
    keys = random_u64(30000)
    expected = cli_build(cli, tmp_path, "u64", keys.astype("<u8").tobytes(), "u64", *cli_options)
    assert ribbon.build(keys, **options).to_bytes() == expected
    assert ribbon.build(pa.array(keys), **options).to_bytes() == expected
    assert ribbon.build(keys.tolist(), **options).to_bytes() == expected


def test_lines_build_matches_cli(cli, tmp_path, random_words):
    words = random_words(20000) + [b"dup", b"dup", b""]
    expected = cli_build(cli, tmp_path, "lines", b"\n".join(words) + b"\n", "lines")
    assert ribbon.build(words).to_bytes() == expected
    assert ribbon.build(pa.array(words, pa.binary())).to_bytes() == expected
    assert ribbon.build(pa.array(words, pa.large_binary())).to_bytes() == expected
    assert ribbon.build(np.array(words, dtype=object)).to_bytes() == expected


def test_retrieval_matches_cli_and_returns_values(cli, tmp_path, random_u64):
    keys = np.unique(random_u64(10000))
    values = (keys % np.uint64(1000)).astype(np.uint32)
    src = tmp_path / "keys.u64"
    src.write_bytes(keys.astype("<u8").tobytes())
    value_file = tmp_path / "values.u64"
    value_file.write_bytes(values.astype("<u8").tobytes())
    out = tmp_path / "kv.ribbon"
    cli("build", "-i", src, "--format", "u64", "--value-file", value_file, "-o", out, "--quiet")
    f = ribbon.build(keys, values=values)
    assert f.is_retrieval and f.fpr is None and f.bits == 10
    assert f.to_bytes() == out.read_bytes()
    assert np.array_equal(f.lookup(keys), values)
    with pytest.raises(ribbon.QueryError):
        f.contains(keys)


def test_cli_file_answers_like_ribbon_query(cli, tmp_path, random_words):
    words = random_words(3000)
    lines = tmp_path / "keys.txt"
    lines.write_bytes(b"\n".join(words) + b"\n")
    out = tmp_path / "keys.ribbon"
    cli("build", "-i", lines, "-o", out, "--quiet", "--bits", "4")
    probes = words[:500] + [b"probe-%d" % i for i in range(3000)]
    probe_file = tmp_path / "probes.txt"
    probe_file.write_bytes(b"\n".join(probes) + b"\n")
    printed = cli("query", out, "-i", probe_file, check=False).stdout.split(b"\n")[:-1]
    f = ribbon.load(out)
    answers = f.contains(probes)
    assert [p for p, a in zip(probes, answers) if a] == printed
    assert 500 < len(printed) < 500 + 3000 * 0.2  # every member, and some false positives


def test_info_matches_cli(cli, tmp_path, random_u64):
    import json

    keys = random_u64(50000)
    path = tmp_path / "k.ribbon"
    ribbon.build(keys, fpr=0.02).save(path)
    expected = json.loads(cli("info", path, "--json").stdout)
    got = ribbon.load(path).info()
    # The CLI prints figures to 4 decimals: abs=1e-4 covers its rounding.
    for name, value in got.items():
        if name == "layers":
            assert len(value) == len(expected["layers"])
            for mine, theirs in zip(value, expected["layers"]):
                for k, v in mine.items():
                    assert v == (theirs[k] if isinstance(v, str) else pytest.approx(theirs[k], rel=1e-5, abs=1e-4)), k
        else:
            exact = isinstance(value, str) or value is None  # null: no names, no metadata
            assert value == (expected[name] if exact else pytest.approx(expected[name], rel=1e-5, abs=1e-4)), name


# ---- files, buffers, pickling --------------------------------------------------------------


def test_save_load_and_buffers(tmp_path, random_u64):
    keys = random_u64(10000)
    f = ribbon.build(keys)
    path = tmp_path / "f.ribbon"
    f.save(path)
    image = path.read_bytes()
    assert image == bytes(f) == f.to_bytes() and f.nbytes == len(image)
    assert os.listdir(tmp_path) == ["f.ribbon"]  # no temporary file left
    for g in (
        ribbon.load(path),
        ribbon.load(str(path), verify=False, mmap=False),
        ribbon.Filter.from_bytes(image),
        ribbon.Filter.from_bytes(memoryview(image)),
        ribbon.Filter.from_bytes(np.frombuffer(image, np.uint8)),
    ):
        assert g.to_bytes() == image and g.contains(keys).all()


def test_layouts(cli, tmp_path, random_u64):
    # A small filter is written compact (format version 5) unless told otherwise; the standard
    # layout is what older readers read, the same filter in a larger frame, as the CLI's.
    keys = random_u64(10000)
    f = ribbon.build(keys)
    assert (f.info()["format_version"], f.info()["layout"]) == (5, "compact")
    standard = f.to_bytes(layout="standard")
    assert len(standard) > len(f.to_bytes()) == len(f.to_bytes(layout="compact"))
    g = ribbon.Filter.from_bytes(standard)
    assert (g.info()["format_version"], g.info()["layout"]) == (3, "standard")
    assert g.to_bytes() == standard and g.contains(keys).all()  # a loaded file keeps its layout
    f.save(tmp_path / "s.ribbon", layout="standard")
    assert (tmp_path / "s.ribbon").read_bytes() == standard
    keys.astype("<u8").tofile(tmp_path / "k.u64")
    cli("build", "-q", "-i", str(tmp_path / "k.u64"), "--format", "u64", "--layout", "standard",
        "-o", str(tmp_path / "c.ribbon"))
    assert (tmp_path / "c.ribbon").read_bytes() == standard
    with pytest.raises(ribbon.OptionsError, match="layout"):
        f.to_bytes(layout="small")


def test_pickle_round_trip(random_words):
    f = ribbon.build(random_words(2000), bits=12)
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, ribbon.Filter)
    assert g.to_bytes() == f.to_bytes() and g.bits == 12 and g.key_kind == "bytes"


def test_empty_filters():
    for keys, kind in (([], "u64"), (np.array([], np.uint64), "u64"), (pa.array([], pa.string()), "bytes")):
        f = ribbon.build(keys)
        assert len(f) == 0 and f.key_kind == kind
    f = ribbon.build([], key_kind="bytes")
    assert f.key_kind == "bytes" and not f.contains([b"x"]).any()


def test_hash_keys_are_the_builders_hashes(tmp_path, random_u64, random_words):
    def mix64(x):
        x = x ^ (x >> np.uint64(33))
        x = x * np.uint64(0xFF51AFD7ED558CCD)
        x = x ^ (x >> np.uint64(33))
        x = x * np.uint64(0xC4CEB9FE1A85EC53)
        return x ^ (x >> np.uint64(33))

    keys = random_u64(1000)
    seed = 5
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64, as in C++
        seed_mixed = mix64(np.uint64(seed ^ 0x5851F42D4C957F2D)) | np.uint64(1)
        expected = mix64((keys + seed_mixed) * np.uint64(0x9E3779B97F4A7C15))
    assert np.array_equal(ribbon.hash_keys(keys, seed=seed), expected)
    assert ribbon.key_kind_of(keys) == "u64" and ribbon.key_kind_of(["a"]) == "bytes"
    # Byte strings: a bulk build from hash_keys() is the build from the keys.
    words = random_words(3000)
    with ribbon.BulkBuilder("bytes", seed=seed) as b:
        b.add_hashes(ribbon.hash_keys(pa.array(words, pa.binary()), seed=seed))
        b.finish(tmp_path / "h.ribbon")
    assert (tmp_path / "h.ribbon").read_bytes() == ribbon.build(words, seed=seed).to_bytes()


# ---- errors --------------------------------------------------------------------------------


def test_wrong_key_kind_raises(random_u64):
    f = ribbon.build(random_u64(100))
    with pytest.raises(ribbon.QueryError, match="64-bit integer keys"):
        f.contains(["text"])
    with pytest.raises(TypeError):
        f.lookup(random_u64(3))


def test_corrupt_and_truncated_buffers_raise(random_u64):
    image = bytearray(ribbon.build(random_u64(5000)).to_bytes())
    with pytest.raises(ribbon.FileError):
        ribbon.Filter.from_bytes(bytes(image[:-1]))
    with pytest.raises(ribbon.FileError):
        ribbon.Filter.from_bytes(b"")
    for position in (0, 20, 130, len(image) // 2, len(image) - 1):
        broken = bytearray(image)
        broken[position] ^= 0x40
        with pytest.raises(ribbon.FileError):
            ribbon.Filter.from_bytes(bytes(broken))
    with pytest.raises(OSError, match="cannot open"):
        ribbon.load("/nonexistent/f.ribbon")


@pytest.mark.parametrize(
    "options",
    [
        {"width": 48},
        {"bits": 0},
        {"bits": 33},
        {"fpr": 1.5},
        {"fpr": 0.01, "bits": 8},
        {"variant": "cuckoo"},
        {"threads": 0},
        {"backend": "tpu"},
        {"shard_size": 1000},
        {"key_kind": "float"},
        {"threshold_codes": "3-bit"},
    ],
)
def test_bad_options_raise_value_error(options):
    with pytest.raises(ValueError):
        ribbon.build([1, 2, 3], **options)


def test_bad_keys_raise():
    with pytest.raises(ribbon.KeysError, match="null"):
        ribbon.build(pa.array(["a", None, "c"]))
    with pytest.raises(ribbon.KeysError, match="null"):
        ribbon.build(pa.array([1, None], pa.int64()))
    with pytest.raises(ribbon.KeysError, match="None"):
        ribbon.build([b"a", None])
    with pytest.raises(ribbon.KeysError, match="64-bit range"):
        ribbon.build([2**64])
    with pytest.raises(ribbon.KeyTypeError, match="mix"):
        ribbon.build([1, b"a"])
    with pytest.raises(ribbon.KeyTypeError):
        ribbon.build(np.array([1.5, 2.5]))
    with pytest.raises(ribbon.KeyTypeError):
        ribbon.build("a single string")
    with pytest.raises(ribbon.KeyTypeError):
        ribbon.build(pa.array([1.5]))
    with pytest.raises(ribbon.KeyTypeError):
        ribbon.build(np.zeros((2, 2), np.uint64))
    with pytest.raises(ribbon.ConflictingValuesError):
        ribbon.build([1, 1], values=[2, 3])
    with pytest.raises(ribbon.KeysError):
        ribbon.build([1, 2], values=[2])
    with pytest.raises(ribbon.KeysError):
        ribbon.build([1, 2], values=[2, -1])
    with pytest.raises(ribbon.Error):  # every error derives from ribbon.Error
        ribbon.build([1], width=7)


def test_save_to_a_missing_directory_raises(tmp_path, random_u64):
    f = ribbon.build(random_u64(100))
    with pytest.raises(OSError):
        f.save(tmp_path / "missing" / "f.ribbon")
    assert not (tmp_path / "missing").exists()


def test_negative_integers_are_their_twos_complement():
    signed = np.array([-1, -2, -(2**31), 5, -(2**63)], np.int64)
    as_u64 = signed.view(np.uint64)
    reference = ribbon.build(as_u64).to_bytes()
    assert ribbon.build(signed).to_bytes() == reference
    assert ribbon.build(signed.tolist()).to_bytes() == reference
    assert ribbon.build(signed[:4].astype(np.int32)).to_bytes() == ribbon.build(as_u64[:4]).to_bytes()
    assert ribbon.build(pa.array(signed)).to_bytes() == reference
    small = np.array([-1, -2, 5], np.int8)
    assert np.array_equal(ribbon.hash_keys(small), ribbon.hash_keys(small.astype(np.int64).view(np.uint64)))


@pytest.mark.parametrize("call", [
    lambda **o: ribbon.build([1, 2], **o),
    lambda **o: ribbon.build_set([1, 2], [3, 4], **o),
    lambda **o: ribbon.build_many([1, 2], [3, 4], **o),
    lambda **o: ribbon.BulkBuilder("u64", **o),
])
def test_build_options_are_checked_by_name_and_type(call):
    with pytest.raises(TypeError, match="unexpected keyword argument 'bit'"):
        call(bit=3)
    with pytest.raises(TypeError, match="seed cannot be -1"):
        call(seed=-1)
    with pytest.raises(TypeError, match="width cannot be 'wide'"):
        call(width="wide")
    with pytest.raises(ribbon.OptionsError, match="fpr"):
        call(fpr=2.0)
