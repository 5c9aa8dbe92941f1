"""Static Ribbon filters: build from numpy, Arrow or Python keys, query in batches.

Every call lands in the C++ library's builders, readers and file format (the `ribbon`
command's), so a Python build and `ribbon build` over the same keys and options write the
same bytes, and any file can be loaded by any reader (C++, Python, the C ABI of
``reader_library()``).

>>> import numpy as np, ribbon
>>> f = ribbon.build(np.arange(1000, dtype=np.uint64), bits=8)
>>> bool(f.contains(np.arange(1000, dtype=np.uint64)).all())
True
"""

from __future__ import annotations

import os as _os

from ._ribbon import (
    BulkBuilder,
    ConflictingValuesError,
    Error,
    FileError,
    Filter,
    KeysError,
    KeyTypeError,
    OptionsError,
    QueryError,
    __version__,
    build,
    has_cuda,
    hash_keys,
    hash_pairs,
    key_kind_of,
    load,
)
from .sets import FilterSet, build_set, load_set

__all__ = [
    "BulkBuilder",
    "ConflictingValuesError",
    "Error",
    "FileError",
    "Filter",
    "FilterSet",
    "KeysError",
    "KeyTypeError",
    "OptionsError",
    "QueryError",
    "__version__",
    "build",
    "build_many",
    "build_set",
    "has_cuda",
    "hash_keys",
    "hash_pairs",
    "key_kind_of",
    "load",
    "load_set",
    "reader_library",
    "c_include_dir",
]


def __getattr__(name: str):
    # build_many (numpy-based) loads on first use: importing the package needs no numpy, as
    # where nanobind's stub generator imports it in the package's isolated build environment.
    if name == "build_many":
        from .many import build_many

        return build_many
    raise AttributeError("module 'ribbon' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | {"build_many"})


def reader_library() -> str:
    """Path of the C ABI's query-only shared library (``libribbon_reader.so``, no oneTBB).

    Load it with ctypes, cgo, JNA or any FFI; its functions are declared in ``ribbon/c.h``
    (``c_include_dir()``). ``RIBBON_READER_LIBRARY`` overrides the installed one.
    """
    override = _os.environ.get("RIBBON_READER_LIBRARY")
    if override:
        return override
    here = _os.path.dirname(__file__)
    for name in sorted(_os.listdir(here)):
        if name.startswith("libribbon_reader.so"):
            return _os.path.join(here, name)
    raise FileNotFoundError("libribbon_reader.so is not installed next to the ribbon package")


def c_include_dir() -> str:
    """The directory holding ``ribbon/c.h`` for C programs using ``reader_library()``."""
    override = _os.environ.get("RIBBON_C_INCLUDE_DIR")
    return override or _os.path.join(_os.path.dirname(__file__), "include")
