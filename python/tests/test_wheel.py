"""The installed wheel is self-contained: it imports, builds and queries on a machine without
oneTBB or the CUDA runtime (a plain Python image, a Spark executor's packed environment).

Runs against a pip-installed package (.ci/run stage 7: `pip install .` into a fresh virtual
environment); skips, saying so, when `ribbon` comes from the build tree, whose extension links
the system's libraries on purpose.
"""

import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

import ribbon

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE_DIR = os.path.realpath(os.path.dirname(ribbon.__file__))
CLI = os.path.join(sysconfig.get_paths()["scripts"], "ribbon")
# What every Linux Python image has: glibc, and the C++ runtime that Python's own packages
# (numpy among them) need too.
BASE_LIBRARIES = {
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2",
    "libpthread.so.0", "librt.so.1", "libstdc++.so.6", "libgcc_s.so.1",
}
# The libraries a wheel must not need from the system: their files are hidden below, and so
# are the compilers.
HIDDEN_NAMES = re.compile(r"^lib(tbb[a-z_0-9]*|cudart)\.so")
HIDDEN_COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc")

NOT_INSTALLED = (
    PACKAGE_DIR != os.path.join(os.path.realpath(sysconfig.get_paths()["platlib"]), "ribbon"))
NOT_INSTALLED_REASON = (f"ribbon is imported from {PACKAGE_DIR}, not from a pip-installed "
                        "wheel: these tests check `pip install .` (.ci/run stage 7)")
if NOT_INSTALLED and os.environ.get("RIBBON_TEST_INSTALLED_WHEEL"):
    # Stage 7 asks for the installed package: a skip there would hide a broken setup.
    raise RuntimeError(NOT_INSTALLED_REASON)
pytestmark = pytest.mark.skipif(NOT_INSTALLED, reason=NOT_INSTALLED_REASON)


# Where `auditwheel repair` puts the libraries it grafts into the wheel, and the command's
# executable (bin/ribbon is then a Python script that executes it).
GRAFTED_DIR = os.path.join(os.path.dirname(PACKAGE_DIR), "ribbon_filter.libs")
REPAIRED_CLI = os.path.join(os.path.dirname(PACKAGE_DIR), "ribbon_filter.scripts", "ribbon")
# This project's own shared objects; every other one in the wheel is bundled third-party code.
OWN_LIBRARIES = re.compile(r"^(_ribbon\.|libribbon_reader\.so)")
# The license file (NOTICE lists them) of each library bundled as a file, and of the code
# compiled into the extension (nanobind, its robin_map) and the CLI (CLI11).
BUNDLED_LIBRARY_LICENSES = {re.compile(r"^libtbb[-.]"): "licenses/oneTBB.txt"}
COMPILED_IN_LICENSES = {"licenses/nanobind.txt", "licenses/robin-map.txt", "licenses/CLI11.txt"}


def shared_objects(directory):
    if not os.path.isdir(directory):
        return []
    return [os.path.join(directory, n) for n in sorted(os.listdir(directory)) if ".so" in n]


def installed_binaries():
    """The package's shared objects (extension, C ABI library, bundled ones: beside them or
    grafted by auditwheel) and the CLI's executable."""
    cli = REPAIRED_CLI if os.path.exists(REPAIRED_CLI) else CLI
    return shared_objects(PACKAGE_DIR) + shared_objects(GRAFTED_DIR) + [cli]


def license_of(library_name):
    """The license file of a bundled library's file name, None where no entry names it."""
    found = [path for pattern, path in BUNDLED_LIBRARY_LICENSES.items() if pattern.match(library_name)]
    return found[0] if found else None


def installed_license_files():
    """{name as in License-File: its file in the installed dist-info's licenses/}."""
    dist = importlib.metadata.distribution("ribbon-filter")
    installed = {str(f).split(".dist-info/licenses/", 1)[1]: f for f in dist.files
                 if ".dist-info/licenses/" in str(f)}
    assert set(installed) == set(dist.metadata.get_all("License-File") or [])
    return installed


def test_the_license_files_are_installed():
    installed = installed_license_files()
    assert {"LICENSE", "NOTICE"} <= set(installed)
    for name, file in installed.items():  # ROOT: the sdist's files in stage 7
        assert file.read_text() == (ROOT / name).read_text(), name


def test_every_bundled_library_ships_its_license():
    installed = installed_license_files()
    bundled = [os.path.basename(p) for p in installed_binaries()[:-1]]
    bundled = [name for name in bundled if not OWN_LIBRARIES.match(name)]
    assert bundled, "no bundled oneTBB in the wheel: this list and NOTICE need a look"
    needed = set(COMPILED_IN_LICENSES)
    for name in bundled:
        assert license_of(name), f"{name} is bundled, but no license file covers it (NOTICE)"
        needed.add(license_of(name))
    notice = installed["NOTICE"].read_text()
    for path in sorted(needed):
        assert path in installed, f"{path} is not in the installed dist-info's licenses/"
        assert path in notice, f"NOTICE does not name {path}"


def resolved_libraries(path):
    """{soname: resolved path or None} of every library `path` loads, as ldd resolves them."""
    out = subprocess.run(["ldd", path], check=True, capture_output=True, text=True).stdout
    libraries = {}
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            name, target = (part.strip() for part in line.split("=>", 1))
            libraries[name] = None if target.startswith("not found") else target.split(" (")[0]
        elif line:
            libraries[os.path.basename(line.split(" (")[0])] = line.split(" (")[0]
    return libraries


def test_every_needed_library_is_in_the_wheel_or_the_base_system():
    assert os.path.exists(CLI), f"the wheel's `ribbon` command is not installed at {CLI}"
    for binary in installed_binaries():
        for name, target in resolved_libraries(binary).items():
            assert target is not None, f"{binary} needs {name}, which is not found"
            in_wheel = os.path.realpath(target).startswith((PACKAGE_DIR + os.sep, GRAFTED_DIR + os.sep))
            assert in_wheel or name in BASE_LIBRARIES, (
                f"{binary} loads {name} from {target}: neither in the wheel nor a base library")


def system_copies():
    """Paths of the system's oneTBB and CUDA runtime files (ldconfig's cache, the toolkit's
    usual directories), resolved through their symbolic links."""
    out = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True, text=True).stdout
    paths = [line.split("=>")[1].strip() for line in out.splitlines()[1:] if "=>" in line]
    for root in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib"):
        if os.path.isdir(root):
            paths += [os.path.join(root, n) for n in os.listdir(root)]
    chosen = {os.path.realpath(p) for p in paths if HIDDEN_NAMES.match(os.path.basename(p))}
    return sorted(p for p in chosen if os.path.isfile(p))


def system_compilers():
    """The compilers on the PATH, resolved: a wheel that compiles anything at import fails."""
    found = (shutil.which(name) for name in HIDDEN_COMPILERS)
    return sorted({os.path.realpath(path) for path in found if path})


def namespace_command():
    """unshare's arguments for a private mount namespace, or a skip saying why none works."""
    candidates = [["unshare", "--mount"], ["unshare", "--mount", "--map-root-user"]]
    if os.geteuid() != 0:
        candidates.reverse()
    errors = []
    for command in candidates:
        try:
            probe = subprocess.run([*command, "true"], capture_output=True, text=True)
        except FileNotFoundError:
            pytest.skip("no `unshare` (util-linux) to hide the system's libraries; "
                        "test_every_needed_library_is_in_the_wheel_or_the_base_system still ran")
        if probe.returncode == 0:
            return command
        errors.append(f"{' '.join(command)}: {probe.stderr.strip()}")
    pytest.skip("no mount namespace to hide the system's libraries in (" + "; ".join(errors) +
                "); test_every_needed_library_is_in_the_wheel_or_the_base_system still ran")


CHECK = textwrap.dedent("""
    import ctypes, subprocess, sys
    import numpy as np
    for name in ("libtbb.so.12", "libcudart.so.13"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        sys.exit(f"the system's {name} still loads: hiding it failed")
    for compiler in sys.argv[5:]:
        try:
            subprocess.run([compiler, "--version"], capture_output=True)
        except OSError:  # the empty file over it cannot be executed
            continue
        sys.exit(f"the compiler {compiler} still runs: hiding it failed")

    import ribbon
    keys = np.arange(1, 200001, dtype=np.uint64)
    f = ribbon.build(keys, bits=8)
    assert f.contains(keys).all()
    misses = f.contains(keys + np.uint64(10**9)).mean()
    assert misses < 0.01, misses
    maps = open("/proc/self/maps").read()
    assert "libcudart" not in maps
    tbb = {line.split()[-1] for line in maps.splitlines() if "libtbb" in line}
    assert tbb and all(p.startswith(sys.argv[1]) for p in tbb), tbb
    ctypes.CDLL(ribbon.reader_library())

    # The wheel's `ribbon` command writes the same bytes.
    with open(sys.argv[3], "wb") as src:
        src.write(keys.tobytes())
    subprocess.run([sys.argv[2], "build", "-i", sys.argv[3], "--format", "u64", "-r", "8",
                    "-o", sys.argv[4], "--quiet"], check=True)
    with open(sys.argv[4], "rb") as out:
        assert out.read() == f.to_bytes(), "the CLI's file differs from ribbon.build's"
    subprocess.run([sys.argv[2], "verify", sys.argv[4]], check=True, capture_output=True)
    print("self-contained:", sorted(tbb))
""")


def test_imports_and_builds_with_the_system_libraries_and_compilers_hidden(tmp_path):
    compilers = system_compilers()
    hidden = system_copies() + compilers
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    # Each system copy is covered by an empty file inside a private mount namespace: a loader
    # that reaches for it finds no ELF file, and a compiler is no program to run.
    script = ('i=0; for p in "$@"; do [ "$i" -lt "$NUM_HIDDEN" ] || break; '
              'mount --bind "$EMPTY" "$p" || exit 3; i=$((i + 1)); done; '
              'shift "$NUM_HIDDEN"; exec "$PYTHON" -c "$CHECK" "$DIR" "$CLI" "$KEYS" "$OUT" "$@"')
    command = ["sh", "-c", script, "sh", *hidden, *compilers]
    if hidden:
        command = [*namespace_command(), *command]
    env = dict(os.environ, EMPTY=str(empty), PYTHON=sys.executable, CHECK=CHECK, DIR=PACKAGE_DIR,
               CLI=CLI, KEYS=str(tmp_path / "keys.u64"), OUT=str(tmp_path / "keys.ribbon"),
               NUM_HIDDEN=str(len(hidden)))
    env.pop("LD_LIBRARY_PATH", None)
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, (
        f"hidden {hidden}:\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    assert "self-contained:" in result.stdout
