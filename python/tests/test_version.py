"""One version number: CMakeLists.txt's ``project(ribbon VERSION ...)`` is the Python
package's (pyproject.toml reads it with scikit-build-core's regex provider), the extension's
``ribbon.__version__`` and ``ribbon --version``'s."""

import importlib.metadata
import pathlib
import re

import pytest

import ribbon

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cmake_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"^project\(ribbon\s+VERSION\s+(\S+)", text, re.M)
    assert match, "CMakeLists.txt has no project(ribbon VERSION ...)"
    return match.group(1)


def test_pyproject_takes_the_cmake_version():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    settings = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    assert settings["provider"] == "scikit_build_core.metadata.regex"
    # What the provider computes for the wheel's metadata.
    match = re.search(settings["regex"], (ROOT / settings["input"]).read_text(), re.M)
    assert match and match.group("value") == cmake_version()


def test_module_version():
    assert ribbon.__version__ == cmake_version()


def test_cli_version(cli):
    assert cli("--version").stdout.decode().strip() == cmake_version()


def test_installed_metadata():
    """The installed wheel's metadata (pip install .), where this ribbon is an installed one."""
    try:
        dist = importlib.metadata.distribution("ribbon")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ribbon is not installed (the build tree's package)")
    installed = pathlib.Path(dist.locate_file("ribbon/__init__.py")).resolve()
    if installed != pathlib.Path(ribbon.__file__).resolve():
        pytest.skip("the ribbon imported is not the installed one")
    assert dist.version == cmake_version()
