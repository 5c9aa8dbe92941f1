"""The package's surface: docstrings on everything public, type stubs, repr."""

import inspect
import os

import ribbon


def public_objects():
    for name in ribbon.__all__:
        obj = getattr(ribbon, name)
        if isinstance(obj, str):
            continue
        yield name, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member, value in vars(obj).items():
                if not member.startswith("_") or member in ("__contains__", "__len__", "__init__"):
                    yield f"{name}.{member}", value


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in public_objects() if not (getattr(obj, "__doc__", None) or "").strip()]
    assert missing == []


def test_type_stubs_are_installed_and_cover_the_api():
    stub = os.path.join(os.path.dirname(ribbon._ribbon.__file__), "_ribbon.pyi")
    text = open(stub).read()
    for name in ("def build(", "def load(", "def hash_keys(", "class Filter", "class BulkBuilder",
                 "def contains(", "def lookup("):
        assert name in text, name
    assert os.path.exists(os.path.join(os.path.dirname(ribbon.__file__), "py.typed"))


def test_repr_and_properties():
    f = ribbon.build([1, 2, 3], bits=9)
    assert "bumped" in repr(f) and "u64" in repr(f) and "3 keys" in repr(f)
    assert (f.width, f.bits, f.variant, f.key_kind, len(f)) == (64, 9, "bumped", "u64", 3)
    assert f.fpr == 2**-9 and f.bits_per_key > 9
