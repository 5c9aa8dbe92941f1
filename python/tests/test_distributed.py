"""ribbon.distributed, the engine-neutral steps, run by its in-process engine: the same bytes
as `ribbon build`, whatever the batches, the order of rows and of ranges; parts removed."""

from __future__ import annotations

import os
import time
import pickle
import re

import numpy as np
import pyarrow as pa
import pytest

import ribbon
from ribbon import distributed as dist
from spark_fixtures import cli_build, random_strings, random_u64

# Small shards and ranges: several ranges per layer and several distributed layers.
SMALL = dict(shard_size=4096, range_keys=3000, one_place_keys=300)
CLI_SMALL = ("--shard-size", "4096")


def parts_left(directory) -> list:
    return [name for name in os.listdir(directory) if "ribbon-parts" in name or ".tmp-" in name]


def test_integer_keys_equal_the_cli_in_any_batches_and_order(tmp_path):
    keys = random_u64(40000, seed=1)
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)
    for order_seed, pieces in [(0, 1), (1, 7), (2, 64)]:
        batches = np.array_split(np.random.default_rng(order_seed).permutation(keys), pieces)
        out = str(tmp_path / f"d{pieces}.ribbon")
        stats = dist.build(batches, out, key_kind="u64", order_seed=order_seed, **SMALL)
        assert len([l for l in stats.layers if not l["replanned"]]) >= 2  # distributed layers
        assert stats.layers[0]["ranges"] >= 5
        assert stats.one_place_layers >= 1
        assert open(out, "rb").read() == expected, f"{pieces} batches"
    assert parts_left(tmp_path) == []


def test_string_keys_from_arrow_equal_the_cli(tmp_path):
    keys = random_strings(60000, seed=2)
    options = ("--shard-size", "16384", "--fpr", "0.01", "--seed", "9", "-w", "128")
    expected = cli_build(keys, str(tmp_path), *options)
    batches = [pa.array(keys[i : i + 4000], pa.binary()) for i in range(0, len(keys), 4000)]
    batches[1] = batches[1].cast(pa.string())  # string and binary columns hash alike
    out = str(tmp_path / "s.ribbon")
    small = dict(SMALL, shard_size=16384)  # the smallest shard at w = 128
    stats = dist.build(batches, out, key_kind="bytes", fpr=0.01, seed=9, width=128, **small)
    assert stats.layers[0]["ranges"] >= 3
    assert open(out, "rb").read() == expected


def test_filter_sets_equal_build_set_in_any_batches(tmp_path):
    # (groups, keys) batches, string groups from Arrow and numpy, pairs given twice: the bytes
    # of ribbon.build_set over the distinct pairs, the group count in the file.
    keys = random_u64(30000, seed=3)
    numbers = np.random.default_rng(4).zipf(1.5, len(keys)) % 500
    groups = ["part-%d" % g for g in numbers]
    expected = ribbon.build_set(groups, keys, seed=5, shard_size=4096).to_bytes()
    batches = [(pa.array(groups[i : i + 7000]), keys[i : i + 7000]) for i in range(0, 30000, 7000)]
    batches.append((np.array(groups[:100], dtype=object), keys[:100]))
    out = str(tmp_path / "set.ribbon")
    stats = dist.build(batches, out, key_kind="u64", group_kind="bytes", seed=5, **SMALL)
    assert (stats.rows, stats.keys, stats.groups) == (30100, 30000, len(set(groups)))
    assert stats.layers[0]["ranges"] >= 5
    assert open(out, "rb").read() == expected
    assert ribbon.load_set(out).group_count == len(set(groups))
    # Without names (version 6), and with metadata: the bytes of ribbon.build_set again.
    for names, metadata in ((False, None), (True, b'{"table": "t"}')):
        dist.build(batches, out, key_kind="u64", group_kind="bytes", seed=5, **SMALL,
                   group_names=names, metadata=metadata)
        built = ribbon.build_set(groups, keys, seed=5, shard_size=4096, group_names=names,
                                 metadata=metadata)
        assert open(out, "rb").read() == built.to_bytes()
        assert ribbon.load_set(out).metadata == metadata
    # The names given (a group without keys among them): the bytes of build_set(all_groups=).
    dist.build(batches, out, key_kind="u64", group_kind="bytes", seed=5, **SMALL,
               group_names=sorted(set(groups)) + ["empty.parquet"])
    built = ribbon.build_set(groups, keys, seed=5, shard_size=4096, all_groups=["empty.parquet"])
    assert open(out, "rb").read() == built.to_bytes()
    assert b"empty.parquet" in ribbon.load_set(out).groups()
    with pytest.raises(ValueError, match="needs the groups"):
        dist.hash_batch(dist.build_params("u64", group_kind="u64"), keys)


@pytest.mark.parametrize("check_bits", [0, 8])
def test_retrieval_equals_ribbon_build_with_values(tmp_path, check_bits):
    # (keys, values) batches, a third of the pairs given twice with their values: the bytes of
    # ribbon.build(keys, values=...) (and so of `ribbon build --values`), values exact.
    keys = random_u64(30000, seed=10)
    values = (np.arange(len(keys), dtype=np.uint64) * 2654435761 % 2**16).astype(np.uint32)
    options = dict(bits=16, check_bits=check_bits, seed=3)
    expected = ribbon.build(keys, values=values, shard_size=4096, **options).to_bytes()
    again = slice(0, 10000)
    batches = [(keys[i : i + 7000], values[i : i + 7000]) for i in range(0, len(keys), 7000)]
    batches.append((pa.array(keys[again]), list(values[again])))
    out = str(tmp_path / "kv.ribbon")
    stats = dist.build(batches, out, key_kind="u64", values=True, **options, **SMALL)
    assert (stats.rows, stats.keys) == (40000, 30000)
    assert len([l for l in stats.layers if not l["replanned"]]) >= 2
    assert open(out, "rb").read() == expected
    assert np.array_equal(ribbon.load(out).lookup(keys), values)


def test_retrieval_refuses_conflicting_and_too_wide_values(tmp_path):
    keys = random_u64(5000, seed=11)
    values = np.arange(5000, dtype=np.uint32) % 256
    out = str(tmp_path / "kv.ribbon")
    conflicting = [(keys, values), (keys[77:78], values[77:78] + 1)]
    with pytest.raises(ribbon.ConflictingValuesError, match=f"key {keys[77]} is given twice") as e:
        dist.build(conflicting, out, key_kind="u64", values=True, bits=8, **SMALL)
    assert e.value.key_hash == ribbon.hash_keys(keys[77:78])[0]
    words = random_strings(3000, seed=12)  # byte-string keys: the engine finds the key
    conflicting = [(words, values[:3000]), ([words[5]], values[5:6] + 1)]
    with pytest.raises(ribbon.ConflictingValuesError, match=re.escape(f"key {words[5]!r} is given twice")):
        dist.build(conflicting, out, key_kind="bytes", values=True, bits=8, **SMALL)
    with pytest.raises(ribbon.KeysError, match="does not fit"):
        dist.build([(keys, values + 1)], out, key_kind="u64", values=True, bits=8, **SMALL)
    assert not os.path.exists(out) and parts_left(tmp_path) == []
    with pytest.raises(ribbon.OptionsError, match="filter set stores no values"):
        dist.build_params("u64", group_kind="u64", values=True)
    with pytest.raises(ribbon.OptionsError, match="check_bits is for builds with values"):
        dist.build_params("u64", check_bits=8)


def test_seeds_take_the_whole_64_bit_range_as_the_cli_and_ribbon_build(tmp_path):
    keys = random_u64(5000, seed=6)
    seed = 2**64 - 5
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL, "--seed", str(seed))
    out = str(tmp_path / "seed.ribbon")
    dist.build([keys], out, key_kind="u64", seed=seed, **SMALL)
    assert open(out, "rb").read() == expected
    assert ribbon.build(keys, seed=seed, shard_size=4096).to_bytes() == expected
    for bad in (-1, 2**64):  # refused as ribbon.build refuses them
        with pytest.raises(TypeError):
            dist.build_params("u64", seed=bad)
        with pytest.raises(TypeError):
            ribbon.build(keys, seed=bad)


def test_repeated_keys_build_the_file_of_the_distinct_keys(tmp_path):
    keys = random_u64(20000, seed=3)
    with_repeats = np.concatenate([keys, keys[:5000], keys[7:8]])
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)
    out = str(tmp_path / "r.ribbon")
    stats = dist.build([with_repeats], out, key_kind="u64", **SMALL)
    assert stats.rows == len(with_repeats) and stats.keys == len(keys)
    assert stats.layers[0]["replanned"]  # planned for the rows, then for the distinct keys
    assert open(out, "rb").read() == expected
    assert len(ribbon.load(out)) == len(keys)


def test_empty_and_tiny_inputs_equal_the_cli(tmp_path):
    for count in (0, 1, 5):
        keys = random_u64(count, seed=4) if count else np.empty(0, dtype=np.uint64)
        expected = cli_build(keys, str(tmp_path))
        out = str(tmp_path / f"t{count}.ribbon")
        dist.build([keys], out, key_kind="u64")
        assert open(out, "rb").read() == expected, f"{count} keys"


def test_two_bit_codes_equal_the_cli(tmp_path):
    keys = random_u64(30000, seed=8)
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL, "--threshold-codes", "2-bit")
    assert expected != cli_build(keys, str(tmp_path), *CLI_SMALL)  # the option is seen
    out = str(tmp_path / "d.ribbon")
    dist.build([keys], out, key_kind="u64", threshold_codes="2-bit", **SMALL)
    assert open(out, "rb").read() == expected
    assert ribbon.load(out).info()["threshold_encoding"] == "2-bit"


def test_params_and_plans_pickle_for_the_workers():
    params = dist.build_params(
        "bytes", bits=11, width=32, seed=5, shard_size=1024, threshold_codes="1+-bit"
    )
    again = pickle.loads(pickle.dumps(params))
    assert (again.key_kind, again.result_bits, again.width, again.seed, again.shard_size) == (
        "bytes", 11, 32, 5, 1024)
    assert again.threshold_codes == "1+-bit"  # not w = 32's default, 2-bit
    plan = dist.plan_layer(params, 1, 100000, 5000)
    copy = pickle.loads(pickle.dumps(plan))
    hashes = random_u64(5000, seed=6)
    ranges = [r for r, _, _ in dist.route_batch(plan, hashes)]
    assert ranges == [r for r, _, _ in dist.route_batch(copy, hashes)]
    assert len(ranges) == plan.num_ranges > 3
    assert (copy.layer, copy.input_keys, copy.num_ranges) == (1, 100000, plan.num_ranges)


def test_a_misrouted_hash_is_refused_and_writes_nothing(tmp_path):
    params = dist.build_params("u64", shard_size=4096)
    plan = dist.plan_layer(params, 0, 20000, 3000)
    routed = {r: h for r, h, _ in dist.route_batch(plan, ribbon.hash_keys(random_u64(20000, seed=7)))}
    destination = dist.Destination(str(tmp_path / "x.ribbon"))
    destination.parts_dir = str(tmp_path)
    with pytest.raises(ribbon.Error, match="a hash of range 2 was given to range 1"):
        dist.solve_task(params, plan, destination, 1, [routed[1], routed[2][:1]])
    assert os.listdir(tmp_path) == []


class ShippingEngine(dist.LocalEngine):
    """Runs the assembly's tasks as a cluster does: pickled, and here in reverse order."""

    def run_tasks(self, tasks):
        shipped = [pickle.loads(pickle.dumps(task)) for task in tasks]
        results = [None] * len(shipped)
        for i in reversed(range(len(shipped))):
            results[i] = shipped[i]()
        return results


class DamagingEngine(dist.LocalEngine):
    """Appends a byte to a part of layer 0 once its ranges are solved."""

    def __init__(self, *args, parts_root, **kwargs):
        super().__init__(*args, **kwargs)
        self.parts_root = parts_root

    def solve_layer(self, plan, source, task):
        results = super().solve_layer(plan, source, task)
        if plan.layer == 0:
            (parts,) = [n for n in os.listdir(self.parts_root) if "ribbon-parts" in n]
            name = sorted(os.listdir(os.path.join(self.parts_root, parts)))[1]
            with open(os.path.join(self.parts_root, parts, name), "ab") as f:
                f.write(b"x")
        return results


def test_the_c_plus_plus_assembler_writes_the_file_locally_and_through_a_filesystem(tmp_path):
    # The assembly's tasks (the checksums, each part's windows placed, or one stream) are the
    # C++ assembler's steps: shipped pickled and run in any order, on local files or on a
    # pyarrow file system that is not local (an object store's path: parts read and the file
    # streamed through it), the file is the CLI's.
    import pyarrow.fs as pafs

    keys = random_u64(60000, seed=12)
    expected = cli_build(keys, str(tmp_path), *CLI_SMALL)
    params = dist.build_params("u64", shard_size=4096)
    options = dict(range_keys=3000, one_place_keys=300)
    out = str(tmp_path / "local.ribbon")
    stats = dist.run_build(ShippingEngine(params, np.array_split(keys, 3)), params, out, **options)
    assert open(out, "rb").read() == expected
    assert 0 < stats.driver_bytes_written < stats.file_bytes
    os.mkdir(tmp_path / "tree")
    tree = pafs.SubTreeFileSystem(str(tmp_path / "tree"), pafs.LocalFileSystem())
    destination = dist.Destination("remote.ribbon", tree)
    assert not destination.local
    dist.run_build(ShippingEngine(params, np.array_split(keys, 3)), params, destination, **options)
    assert (tmp_path / "tree" / "remote.ribbon").read_bytes() == expected
    assert parts_left(tmp_path) == [] and os.listdir(tmp_path / "tree") == ["remote.ribbon"]


@pytest.mark.parametrize("remote", [False, True])
def test_a_damaged_part_is_refused_and_the_old_file_stays(tmp_path, remote):
    import pyarrow.fs as pafs

    params = dist.build_params("u64", shard_size=4096)
    out = tmp_path / "d.ribbon"
    out.write_bytes(b"the previous file")
    destination = str(out)
    if remote:
        destination = dist.Destination("d.ribbon", pafs.SubTreeFileSystem(str(tmp_path),
                                                                         pafs.LocalFileSystem()))
    engine = DamagingEngine(params, [random_u64(60000, seed=13)], parts_root=str(tmp_path))
    with pytest.raises(ribbon.FileError, match="not a part of this build, or damaged"):
        dist.run_build(engine, params, destination, range_keys=3000, one_place_keys=300)
    assert out.read_bytes() == b"the previous file"
    assert parts_left(tmp_path) == []


class FailingEngine(dist.LocalEngine):
    """Dies in layer `fail_layer`, after the earlier layers wrote their parts."""

    fail_layer = 1

    def solve_layer(self, plan, source, task):
        if plan.layer == self.fail_layer:
            raise RuntimeError("engine lost")
        return super().solve_layer(plan, source, task)


def test_a_failed_build_leaves_the_old_file_and_no_parts(tmp_path):
    out = tmp_path / "f.ribbon"
    out.write_bytes(b"the previous file")
    params = dist.build_params("u64", shard_size=4096)
    engine = FailingEngine(params, [random_u64(60000, seed=8)])  # layer 1 is distributed
    with pytest.raises(RuntimeError, match="engine lost"):
        dist.run_build(engine, params, str(out), range_keys=3000, one_place_keys=300)
    assert out.read_bytes() == b"the previous file"
    assert parts_left(tmp_path) == []
    # A parts directory left by a driver that died is removed by the next build.
    stale = str(tmp_path / (dist.Destination(str(out)).parts_prefix() + "dead"))
    os.mkdir(stale)
    open(os.path.join(stale, "L00-1-R000000000.part"), "wb").close()
    dist.build([random_u64(100, seed=9)], str(out), key_kind="u64")
    assert parts_left(tmp_path) == []


def test_a_running_build_of_the_same_output_keeps_its_parts(tmp_path):
    import subprocess
    import sys

    # A parts directory whose lock is held (a build of the same output, running) is left
    # alone by another build, which still writes the file; one whose lock is free goes.
    out = str(tmp_path / "f.ribbon")
    running = dist.Destination(out)
    live = running.make_parts_directory()
    open(os.path.join(live, "L00-1-R000000000.part"), "wb").close()
    dist.build([random_u64(100, seed=9)], out, key_kind="u64")
    assert os.path.exists(os.path.join(live, "L00-1-R000000000.part"))
    assert ribbon.load(out).info()["key_count"] == 100
    running.remove_parts()
    assert parts_left(tmp_path) == []
    dead = subprocess.run(  # a driver that dies with its parts directory made and locked
        [sys.executable, "-c", "import os, sys; from ribbon import distributed as dist; "
         "d = dist.Destination(sys.argv[1]); print(d.make_parts_directory(), flush=True); "
         "os._exit(0)",
         out], check=True, capture_output=True, text=True).stdout.strip()
    assert os.path.isdir(dead)
    dist.build([random_u64(100, seed=9)], out, key_kind="u64")
    assert os.path.exists(dead)  # empty and young: perhaps a build's not locked yet
    an_hour_ago = time.time() - 3600
    os.utime(dead, (an_hour_ago, an_hour_ago))
    dist.build([random_u64(100, seed=9)], out, key_kind="u64")
    assert not os.path.exists(dead)


def test_a_build_between_another_creating_and_locking_its_parts_leaves_them(tmp_path):
    # A build lists the parts directories of its output while another build has created its
    # own but not yet locked it (microseconds apart; here the second build runs right there).
    # The directory is empty and young: it is left alone, as the C++ temporaries' grace period
    # leaves theirs, and the first build keeps it.
    out = str(tmp_path / "f.ribbon")
    first = dist.Destination(out)
    created = []

    def sibling_builds_after_creating(path):
        created.append(path)
        dist.build([random_u64(100, seed=9)], out, key_kind="u64")

    first._before_locking = sibling_builds_after_creating
    parts = first.make_parts_directory()
    assert created == [parts] and os.path.isdir(parts) and first._parts is not None
    assert ribbon.load(out).info()["key_count"] == 100  # the sibling built its file
    first.remove_parts()
    assert parts_left(tmp_path) == []


def test_bad_options_and_paths_fail_before_any_work(tmp_path):
    with pytest.raises(OSError, match="does not exist"):
        dist.build([np.arange(10, dtype=np.uint64)], str(tmp_path / "no" / "x.ribbon"), key_kind="u64")
    with pytest.raises(OSError, match="is a directory"):
        dist.build([np.arange(10, dtype=np.uint64)], str(tmp_path), key_kind="u64")
    with pytest.raises(ribbon.OptionsError):
        dist.build_params("u64", width=48)
    with pytest.raises(ribbon.Error, match="key kind"):
        dist.build_params("floats")


def test_the_process_pool_example_equals_the_cli(tmp_path):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    import process_pool_engine

    keys = random_u64(40000, seed=10)
    out = str(tmp_path / "p.ribbon")
    process_pool_engine.build(np.array_split(keys, 5), out, workers=2, **SMALL)
    assert open(out, "rb").read() == cli_build(keys, str(tmp_path), *CLI_SMALL)


KILL_BEFORE_RENAME = """
import os, signal, sys
import numpy as np
from ribbon import distributed as dist

def killed(self, path):  # the file is assembled: the driver dies before the rename
    os.kill(os.getpid(), signal.SIGKILL)

dist.Destination.file_bytes = killed
keys = np.random.default_rng(1).integers(0, 2**64, 40000, dtype=np.uint64)
dist.build(np.array_split(keys, 3), sys.argv[1], key_kind="u64", shard_size=4096,
           range_keys=3000, one_place_keys=300)
"""


def test_a_driver_killed_before_the_rename_leaves_the_old_file(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "k.ribbon"
    out.write_bytes(b"the previous file")
    run = subprocess.run([sys.executable, "-c", KILL_BEFORE_RENAME, str(out)], check=False)
    assert run.returncode == -9  # killed, after assembling the file under its temporary name
    assert out.read_bytes() == b"the previous file"
    assert len(parts_left(tmp_path)) == 1  # the dead build's parts and temporary file
    dist.build([random_u64(100, seed=9)], str(out), key_kind="u64")  # the next build: removed
    assert parts_left(tmp_path) == [] and len(ribbon.load(str(out))) == 100


def test_s3_outputs_past_five_gib_are_refused_before_solving():
    import pyarrow.fs as pafs

    s3 = pafs.S3FileSystem(endpoint_override="127.0.0.1:9", anonymous=True, scheme="http")
    destination = dist.Destination("bucket/big.ribbon", s3)
    destination.check_size(5 * 2**30)  # at the limit: allowed
    with pytest.raises(ValueError, match="5 GiB"):
        destination.check_size(5 * 2**30 + 1)
    dist.Destination("/tmp/big.ribbon").check_size(10 * 2**30)  # local files have no such limit


def test_hash_blobs_read_alike_with_32_and_64_bit_offsets():
    from ribbon.spark import _blob_views

    hashes = np.arange(1, 11, dtype=np.uint64)
    blobs = [hashes[:3].tobytes(), b"", hashes[3:].tobytes()]
    for kind in (pa.binary(), pa.large_binary()):
        column = pa.array(blobs, type=kind).slice(1)  # an offset, as Spark's batches may have
        assert np.array_equal(np.concatenate(_blob_views(column)), hashes[3:]), kind
    with pytest.raises(TypeError, match="binary"):
        _blob_views(pa.array(["x"]))


def test_the_distributed_builds_share_one_option_list(tmp_path):
    """ribbon.distributed.build, ribbon.spark.build and build_set take the options of
    BUILD_OPTIONS (their one definition), shown in their signatures with its defaults."""
    import inspect

    import ribbon.spark

    for function in (dist.build, ribbon.spark.build, ribbon.spark.build_set):
        parameters = inspect.signature(function).parameters
        for name, (default, _) in dist.BUILD_OPTIONS.items():
            assert parameters[name].default == default, (function.__name__, name)
            assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError, match="'fpx'"):
        dist.build([np.arange(10, dtype=np.uint64)], str(tmp_path / "f.ribbon"), key_kind="u64",
                   fpx=0.01)
    stats = dist.build([np.arange(1000, dtype=np.uint64)], str(tmp_path / "f.ribbon"),
                       key_kind="u64", bits=5, seed=3)
    assert (tmp_path / "f.ribbon").read_bytes() == ribbon.build(
        np.arange(1000, dtype=np.uint64), bits=5, seed=3).to_bytes()
    assert stats.keys == 1000
