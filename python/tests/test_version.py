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


def format_line(read, written):
    return f"format versions: reads {read[0]}-{read[1]}, writes {written}"


def test_cli_version(cli, c_abi_versions):
    lines = cli("--version").stdout.decode().splitlines()
    version, (oldest_read, newest_read, oldest_written, newest_written) = c_abi_versions
    assert lines == [cmake_version(),
                     format_line((oldest_read, newest_read), f"{oldest_written}-{newest_written}")]


@pytest.fixture
def c_abi_versions():
    """The C ABI library's ribbon_version and ribbon_format_versions."""
    import ctypes
    import os

    path = os.environ.get("RIBBON_READER_LIBRARY") or ribbon.reader_library()
    if not path or not os.path.exists(path):
        pytest.skip("no C ABI library (RIBBON_READER_LIBRARY)")
    lib = ctypes.CDLL(path)
    lib.ribbon_version.restype = ctypes.c_char_p
    out = [ctypes.c_uint32() for _ in range(4)]
    lib.ribbon_format_versions(*[ctypes.byref(v) for v in out])
    return lib.ribbon_version().decode(), tuple(v.value for v in out)


def test_c_abi_and_header_versions(c_abi_versions):
    version, formats = c_abi_versions
    assert version == cmake_version()
    header = (ROOT / "common/include/ribbon/version.hpp").read_text()
    parts = [re.search(rf"#define RIBBON_VERSION_{p} (\d+)", header).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    assert ".".join(parts) == cmake_version()
    # Reads every version of the corpus's rule table, writes from version 2 (1 is read only).
    assert formats == (1, 7, 2, 7)


def maven_checks():
    """java/tests/check_maven_artifact.py, the checks of ctest java.maven, as a module."""
    import importlib.util

    path = ROOT / "java/tests/check_maven_artifact.py"
    spec = importlib.util.spec_from_file_location("check_maven_artifact", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jar_version(c_abi_versions, cli):
    import os
    import shutil
    import subprocess
    import zipfile

    from ribbon import spark_jvm

    try:
        jar = spark_jvm.jar_path()  # $RIBBON_JAVA_JAR, else the installed package's
    except FileNotFoundError:
        if os.environ.get("RIBBON_TEST_REQUIRE_JAR"):
            raise
        pytest.skip("no ribbon.jar (RIBBON_JAVA_JAR, or in the package)")
    if not shutil.which("java"):
        pytest.skip("no java")
    _, (oldest_read, newest_read, _, _) = c_abi_versions
    out = subprocess.run(["java", "-jar", jar, "--version"], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out == [cmake_version(),
                   format_line((oldest_read, newest_read), "none (a reader)")]
    manifest = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode()
    assert f"Implementation-Version: {cmake_version()}" in manifest.splitlines()
    # The Maven artifact's pom and license in the jar, of `ribbon --version`'s version.
    cli_release = cli("--version").stdout.decode().splitlines()[0]
    license_text = (ROOT / "LICENSE").read_text()
    assert maven_checks().check_jar(jar, cli_release, license_text) == []


def test_installed_metadata():
    """The installed wheel's metadata (pip install .), where this ribbon is an installed one."""
    try:
        dist = importlib.metadata.distribution("ribbon-filter")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ribbon-filter is not installed (the build tree's package)")
    installed = pathlib.Path(dist.locate_file("ribbon/__init__.py")).resolve()
    if installed != pathlib.Path(ribbon.__file__).resolve():
        pytest.skip("the ribbon imported is not the installed one")
    assert dist.version == cmake_version()
    meta = dist.metadata
    assert meta["Name"] == DISTRIBUTION
    assert meta["Requires-Python"] and meta["Summary"]
    # The long description is the README, as PyPI shows it.
    assert meta["Description-Content-Type"] == "text/markdown"
    readme = (ROOT / "README.md").read_text()
    assert (meta.get_payload() or meta["Description"] or "").strip() == readme.strip()
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3" in classifiers
    extras = set(meta.get_all("Provides-Extra"))
    assert {"arrow", "spark", "test"} <= extras
    # PEP 639 (the files themselves: test_wheel.py).
    assert meta["License-Expression"] == "Apache-2.0"


# The distribution is `ribbon-filter` (the name `ribbon` on PyPI is another project's); the
# import name and the command stay `ribbon`.
DISTRIBUTION = "ribbon-filter"
# A pip install of the bare name `ribbon`, with or without extras: `pip install ribbon`,
# `pip install 'ribbon[arrow]'`, `pip install "ribbon[spark]"`.
WRONG_INSTALL = re.compile(r"pip install\s+['\"]?ribbon(\[[^\]]*\])?['\"]?(?=[\s)`'\",.]|$)", re.M)


def test_distribution_name():
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'^\[project\]\s*\nname\s*=\s*"([^"]+)"', text, re.M)
    assert match and match.group(1) == DISTRIBUTION


def test_no_message_installs_the_wrong_distribution():
    """Every message and document that tells a user what to install names ribbon-filter."""
    suffixes = {".py", ".md", ".cpp", ".hpp", ".h", ".java", ".toml", ".txt", ".sh"}
    roots = ["README.md", "pyproject.toml", "docs", "python/ribbon", "tools", "cpu", "common",
             "cuda", "java/src", "bench"]
    offenders = []
    for root in roots:
        path = ROOT / root
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.suffix in suffixes]
        for file in files:
            for match in WRONG_INSTALL.finditer(file.read_text(errors="replace")):
                offenders.append(f"{file.relative_to(ROOT)}: {match.group(0)}")
    # bench/RESULTS.md and bench/history/ are the dated log: they quote what was run then.
    offenders = [o for o in offenders if not o.startswith(("bench/RESULTS.md", "bench/history/"))]
    assert not offenders, "\n".join(offenders)


def test_wrong_install_pattern():
    """The pattern above finds the bare name and leaves the right one and local paths alone."""
    assert WRONG_INSTALL.search("(pip install 'ribbon[arrow]' there")
    assert WRONG_INSTALL.search("pip install ribbon\n")
    assert not WRONG_INSTALL.search("pip install 'ribbon-filter[arrow]' there")
    assert not WRONG_INSTALL.search('pip install ".[spark]"')
