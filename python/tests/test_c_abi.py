"""The C ABI (ribbon/c.h, libribbon_reader): from ctypes, from a C program, and its
dependencies (no oneTBB)."""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import ribbon


class Info(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("format_version", "variant", "key_kind", "width", "result_bits", "num_layers",
                     "is_retrieval", "check_bits")
    ] + [(name, ctypes.c_uint64) for name in ("key_count", "file_bytes", "seed", "shard_size")] + [
        ("bits_per_key", ctypes.c_double),
        ("expected_fpr", ctypes.c_double),
    ]


@pytest.fixture(scope="module")
def lib():
    try:
        path = ribbon.reader_library()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    c = ctypes.CDLL(path)
    p = ctypes.POINTER
    u64p, u8p, u32p = p(ctypes.c_uint64), p(ctypes.c_uint8), p(ctypes.c_uint32)
    c.ribbon_last_error.restype = ctypes.c_char_p
    c.ribbon_open_file.argtypes = [ctypes.c_char_p, ctypes.c_int, p(ctypes.c_void_p)]
    c.ribbon_open_buffer.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int, p(ctypes.c_void_p)]
    c.ribbon_close.argtypes = [ctypes.c_void_p]
    c.ribbon_get_info.argtypes = [ctypes.c_void_p, p(Info)]
    c.ribbon_contains_u64.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    c.ribbon_contains_bytes.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64]
    c.ribbon_contains_u64_batch.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64, u8p]
    c.ribbon_contains_bytes_batch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u64p, ctypes.c_uint64, u8p]
    c.ribbon_lookup_u64.argtypes = [ctypes.c_void_p, ctypes.c_uint64, u32p]
    c.ribbon_lookup_u64_batch.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64, u32p]
    c.ribbon_lookup_bytes_batch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u64p, ctypes.c_uint64, u32p]
    threads = ctypes.c_uint32
    c.ribbon_contains_u64_batch_threads.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64, u8p, threads]
    c.ribbon_contains_bytes_batch_threads.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, u64p, ctypes.c_uint64, u8p, threads]
    c.ribbon_lookup_u64_batch_threads.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64, u32p, threads]
    c.ribbon_lookup_bytes_batch_threads.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, u64p, ctypes.c_uint64, u32p, threads]
    c.ribbon_get_set_info.argtypes = [ctypes.c_void_p, u32p, u64p]
    c.ribbon_contains_in_u64.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
    c.ribbon_contains_in_u64_bytes.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]
    c.ribbon_contains_in_bytes_u64.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]
    c.ribbon_contains_in_bytes.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]
    c.ribbon_find_u64.argtypes = [ctypes.c_void_p, ctypes.c_uint64, u32p]
    c.ribbon_find_bytes.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, u32p]
    c.ribbon_find_u64_batch_threads.argtypes = [ctypes.c_void_p, u64p, ctypes.c_uint64, u32p, u8p, threads]
    c.ribbon_find_bytes_batch_threads.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, u64p, ctypes.c_uint64, u32p, u8p, threads]
    return c


def open_file(lib, path):
    handle = ctypes.c_void_p()
    assert lib.ribbon_open_file(str(path).encode(), 1, ctypes.byref(handle)) == 0, lib.ribbon_last_error()
    return handle


def ptr(array, ctype):
    return array.ctypes.data_as(ctypes.POINTER(ctype))


def test_integer_filter_from_ctypes(lib, tmp_path, random_u64):
    keys = random_u64(20000)
    probes = np.concatenate([keys, random_u64(20000, seed=9)])
    f = ribbon.build(keys, bits=6)
    f.save(tmp_path / "f.ribbon")
    h = open_file(lib, tmp_path / "f.ribbon")
    try:
        out = np.zeros(len(probes), np.uint8)
        assert lib.ribbon_contains_u64_batch(h, ptr(probes, ctypes.c_uint64), len(probes), ptr(out, ctypes.c_uint8)) == 0
        assert np.array_equal(out.astype(bool), f.contains(probes))
        assert [lib.ribbon_contains_u64(h, int(k)) for k in probes[19990:20010]] == list(out[19990:20010])
        info = Info()
        assert lib.ribbon_get_info(h, ctypes.byref(info)) == 0
        assert (info.key_count, info.file_bytes, info.result_bits, info.width, info.key_kind) == (
            len(keys), f.nbytes, 6, 64, 0)
        assert info.expected_fpr == pytest.approx(f.fpr) and info.bits_per_key == pytest.approx(f.bits_per_key)
        # The other key kind and the other query are errors, with the library's message.
        assert lib.ribbon_contains_bytes(h, b"x", 1) == -1
        assert b"64-bit integer" in lib.ribbon_last_error()
        value = ctypes.c_uint32()
        assert lib.ribbon_lookup_u64(h, 1, ctypes.byref(value)) == -1
        assert b"contains()" in lib.ribbon_last_error()
    finally:
        lib.ribbon_close(h)


def open_image(lib, image):
    handle = ctypes.c_void_p()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(handle)) == 0, lib.ribbon_last_error()
    return handle


def test_filter_sets_of_every_kind_from_ctypes(lib, random_u64, random_words):
    keys, words = random_u64(3000), list(dict.fromkeys(random_words(6000)))[:3000]  # distinct
    ids = np.arange(3000, dtype=np.uint64) % 7
    names = [b"file-%d" % g for g in ids]
    cases = [  # (groups, keys, the call, how it passes a group and a key)
        (ids, keys, lib.ribbon_contains_in_u64, lambda g, k: (int(g), int(k))),
        (ids, words, lib.ribbon_contains_in_u64_bytes, lambda g, k: (int(g), k, len(k))),
        (names, keys, lib.ribbon_contains_in_bytes_u64, lambda g, k: (g, len(g), int(k))),
        (names, words, lib.ribbon_contains_in_bytes, lambda g, k: (g, len(g), k, len(k))),
    ]
    for groups, members, call, args in cases:
        fs = ribbon.build_set(groups, members)
        h = open_image(lib, fs.to_bytes())
        try:
            answers = [call(h, *args(g, k)) for g, k in zip(groups, members)]
            assert answers == [1] * len(members), call.__name__
            others = [call(h, *args(g, k)) for g, k in zip(groups[1:] + groups[:1] if isinstance(groups, list)
                                                             else np.roll(groups, 1), members)]
            assert sum(others) <= 3000 * 2.0**-8 * 3 + 5 and -1 not in others
            kind, count = ctypes.c_uint32(), ctypes.c_uint64()
            assert lib.ribbon_get_set_info(h, ctypes.byref(kind), ctypes.byref(count)) == 0
            assert (kind.value, count.value) == (1 if groups is ids else 2, 7)
            # A set is not a filter of keys, nor a group of the other kind.
            assert lib.ribbon_contains_u64(h, 1) == -1 and b"filter set" in lib.ribbon_last_error()
            out = np.zeros(1, np.uint8)
            assert lib.ribbon_contains_u64_batch(h, ptr(keys[:1], ctypes.c_uint64), 1, ptr(out, ctypes.c_uint8)) == -1
            wrong = lib.ribbon_contains_in_bytes_u64 if groups is ids else lib.ribbon_contains_in_u64
            wrong_args = (b"g", 1, 1) if groups is ids else (1, 1)
            assert wrong(h, *wrong_args) == -1
        finally:
            lib.ribbon_close(h)
    plain = open_image(lib, ribbon.build(keys).to_bytes())
    try:
        kind, count = ctypes.c_uint32(), ctypes.c_uint64()
        assert lib.ribbon_get_set_info(plain, ctypes.byref(kind), ctypes.byref(count)) == 0
        assert (kind.value, count.value) == (0, 0)
        assert lib.ribbon_contains_in_u64(plain, 1, int(keys[0])) == -1
        assert b"not a filter set" in lib.ribbon_last_error()
    finally:
        lib.ribbon_close(plain)


def test_byte_strings_and_retrieval_from_ctypes(lib, random_words):
    words = list(dict.fromkeys(random_words(3000)))  # distinct: one value per key
    data = b"".join(words)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.uint64)
    f = ribbon.build(words, values=np.arange(len(words)) % 200)
    image = f.to_bytes()
    h = ctypes.c_void_p()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(h)) == 0
    try:
        out = np.zeros(len(words), np.uint32)
        assert lib.ribbon_lookup_bytes_batch(h, data, ptr(offsets, ctypes.c_uint64), len(words), ptr(out, ctypes.c_uint32)) == 0
        assert np.array_equal(out, f.lookup(words))
        assert np.array_equal(out[:len(words)], np.arange(len(words)) % 200)  # members: their values
        flags = np.zeros(len(words), np.uint8)
        assert lib.ribbon_contains_bytes_batch(h, data, ptr(offsets, ctypes.c_uint64), len(words), ptr(flags, ctypes.c_uint8)) == -1
        assert b"lookup()" in lib.ribbon_last_error()
    finally:
        lib.ribbon_close(h)


def test_batched_calls_on_threads_answer_as_the_scalar_calls(lib, random_u64, random_words):
    keys = random_u64(50000)
    probes = np.concatenate([keys, random_u64(150000, seed=11)])  # above one thread's share
    f = ribbon.build(keys)
    image = f.to_bytes()
    h = ctypes.c_void_p()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(h)) == 0
    try:
        scalar = np.array([lib.ribbon_contains_u64(h, int(k)) for k in probes], np.uint8)
        for threads in (0, 1, 2, 3):
            out = np.full(len(probes), 7, np.uint8)
            assert lib.ribbon_contains_u64_batch_threads(
                h, ptr(probes, ctypes.c_uint64), len(probes), ptr(out, ctypes.c_uint8), threads) == 0
            assert np.array_equal(out, scalar), threads
    finally:
        lib.ribbon_close(h)
    words = list(dict.fromkeys(random_words(100000)))
    data = b"".join(words)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.uint64)
    r = ribbon.build(words[:50000], values=np.arange(50000) % 200)
    image = r.to_bytes()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(h)) == 0
    try:
        expected = r.lookup(words)
        for threads in (0, 2):
            out = np.zeros(len(words), np.uint32)
            assert lib.ribbon_lookup_bytes_batch_threads(
                h, data, ptr(offsets, ctypes.c_uint64), len(words), ptr(out, ctypes.c_uint32), threads) == 0
            assert np.array_equal(out, expected)
        # Decreasing offsets are an error, not a crash.
        bad = offsets.copy()
        bad[10] = bad[12]
        out = np.zeros(len(words), np.uint32)
        assert lib.ribbon_lookup_bytes_batch_threads(
            h, data, ptr(bad, ctypes.c_uint64), len(words), ptr(out, ctypes.c_uint32), 2) == -1
        assert b"offsets must not decrease" in lib.ribbon_last_error()
    finally:
        lib.ribbon_close(h)


def test_open_errors_from_ctypes(lib, tmp_path, random_u64):
    h = ctypes.c_void_p()
    assert lib.ribbon_open_file(b"/nonexistent/f.ribbon", 1, ctypes.byref(h)) == -1
    assert b"cannot open /nonexistent/f.ribbon" in lib.ribbon_last_error() and not h.value
    image = bytearray(ribbon.build(random_u64(1000)).to_bytes())
    image[len(image) // 2] ^= 1
    assert lib.ribbon_open_buffer(bytes(image), len(image), 1, ctypes.byref(h)) == -1
    assert b"checksum" in lib.ribbon_last_error()
    assert lib.ribbon_open_buffer(bytes(image[:100]), 100, 1, ctypes.byref(h)) == -1
    assert lib.ribbon_last_error() != b""


def test_reader_library_does_not_link_tbb():
    path = ribbon.reader_library()
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    dynamic = subprocess.run([readelf, "-d", "-W", path], check=True, capture_output=True, text=True).stdout
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert needed and not any("tbb" in line.lower() or "cuda" in line.lower() for line in needed), needed
    symbols = subprocess.run([readelf, "--dyn-syms", "-W", path], check=True, capture_output=True, text=True).stdout
    assert "tbb" not in symbols.lower()
    exported = {line.split()[-1] for line in symbols.splitlines()
                if " GLOBAL " in line and " DEFAULT " in line and " UND " not in line}
    assert exported and all(name.startswith("ribbon_") for name in exported), exported


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "ribbon/c.h"
int main(int argc, char** argv) {
  ribbon_reader* r = NULL;
  if (ribbon_open_file(argv[1], 1, &r) != RIBBON_OK) { printf("error %s\n", ribbon_last_error()); return 2; }
  ribbon_info info;
  ribbon_get_info(r, &info);
  unsigned long positives = 0;
  for (uint64_t k = 0; k < 100000; ++k) positives += ribbon_contains_u64(r, k * 3) == 1;
  printf("%llu %lu\n", (unsigned long long)info.key_count, positives);
  ribbon_close(r);
  return ribbon_c_api_version() == RIBBON_C_API_VERSION ? 0 : 3;
}
"""


def test_from_a_c_program(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    keys = np.arange(0, 300000, 3, dtype=np.uint64)[:50000]  # multiples of 3 below 150000
    ribbon.build(keys, bits=10).save(tmp_path / "f.ribbon")
    (tmp_path / "main.c").write_text(C_PROGRAM)
    lib = ribbon.reader_library()
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-I", ribbon.c_include_dir(), str(tmp_path / "main.c"),
                    lib, f"-Wl,-rpath,{os.path.dirname(lib)}", "-o", str(tmp_path / "main")], check=True)
    out = subprocess.run([str(tmp_path / "main"), str(tmp_path / "f.ribbon")], check=True, capture_output=True,
                         text=True).stdout.split()
    # 50000 members among the 100000 probes, and about 50000 / 1024 false positives.
    assert int(out[0]) == 50000 and 50000 <= int(out[1]) < 50000 + 200


def test_check_bits_from_ctypes(lib, random_u64, random_words):
    # Integer keys: ribbon_find_* and ribbon_contains_* answer as Filter.lookup(absent=) and
    # contains(); the values are the value bits, the info names the check bits.
    keys = random_u64(40000)
    probes = np.concatenate([keys, random_u64(100000, seed=12)])
    values = (np.arange(len(keys)) % 1000).astype(np.uint32)
    f = ribbon.build(keys, values=values, check_bits=6)
    image = f.to_bytes()
    h = ctypes.c_void_p()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(h)) == 0
    try:
        info = Info()
        assert lib.ribbon_get_info(h, ctypes.byref(info)) == 0
        # (format version 5: the compact layout of a small file, which records check bits)
        assert (info.format_version, info.result_bits, info.check_bits) == (5, 16, 6)
        out = np.zeros(len(probes), np.uint32)
        found = np.zeros(len(probes), np.uint8)
        assert lib.ribbon_find_u64_batch_threads(h, ptr(probes, ctypes.c_uint64), len(probes), ptr(out, ctypes.c_uint32), ptr(found, ctypes.c_uint8), 2) == 0
        expected = f.lookup(probes, absent=2**32 - 1)
        assert np.array_equal(found.astype(bool), expected != 2**32 - 1)
        assert np.array_equal(out[found == 1], expected[found == 1])
        assert found[: len(keys)].all() and np.array_equal(out[: len(keys)], values)
        assert 0 < found[len(keys):].sum() < 100000 / 64 * 1.5  # about 2^-6 of non-members
        flags = np.zeros(len(probes), np.uint8)
        assert lib.ribbon_contains_u64_batch(h, ptr(probes, ctypes.c_uint64), len(probes), ptr(flags, ctypes.c_uint8)) == 0
        assert np.array_equal(flags, found)
        value = ctypes.c_uint32(7)
        for i in (0, 1, len(keys), len(keys) + 1, len(keys) + 2):
            assert lib.ribbon_find_u64(h, int(probes[i]), ctypes.byref(value)) == found[i]
            assert lib.ribbon_contains_u64(h, int(probes[i])) == found[i]
            if found[i]:
                assert value.value == out[i]
    finally:
        lib.ribbon_close(h)
    # Byte strings.
    words = list(dict.fromkeys(random_words(3000)))
    data = b"".join(words)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.uint64)
    g = ribbon.build(words, values=np.arange(len(words)) % 200, check_bits=9)
    image = g.to_bytes()
    assert lib.ribbon_open_buffer(image, len(image), 1, ctypes.byref(h)) == 0
    try:
        out = np.zeros(len(words), np.uint32)
        found = np.zeros(len(words), np.uint8)
        assert lib.ribbon_find_bytes_batch_threads(h, data, ptr(offsets, ctypes.c_uint64), len(words), ptr(out, ctypes.c_uint32), ptr(found, ctypes.c_uint8), 1) == 0
        assert found.all() and np.array_equal(out, np.arange(len(words)) % 200)
        value = ctypes.c_uint32()
        assert lib.ribbon_find_bytes(h, words[5], len(words[5]), ctypes.byref(value)) == 1
        assert value.value == 5
        assert lib.ribbon_find_bytes(h, b"not a key", 9, ctypes.byref(value)) in (0, 1)
        assert lib.ribbon_find_u64(h, 1, ctypes.byref(value)) == -1  # the other key kind
    finally:
        lib.ribbon_close(h)
