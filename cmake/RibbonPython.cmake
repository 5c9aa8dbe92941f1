# RIBBON_BUILD_PYTHON: the Python package's nanobind extension (python/CMakeLists.txt).
# AUTO builds it where a Python interpreter with development headers and nanobind are found.
# The interpreter: Python_EXECUTABLE if given, else the repository's .venv (the quick start
# makes one), else the first python3 on the PATH. Under scikit-build-core (pip install .) the
# interpreter doing the install is used.
set(RIBBON_WITH_PYTHON OFF)
if(RIBBON_BUILD_PYTHON STREQUAL "AUTO" AND RIBBON_SANITIZE AND NOT SKBUILD)
  # A sanitized extension cannot be loaded by an uninstrumented interpreter.
  message(STATUS "ribbon: Python extension OFF (RIBBON_SANITIZE is set)")
elseif(RIBBON_BUILD_PYTHON)
  if(NOT DEFINED Python_EXECUTABLE AND NOT SKBUILD AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  endif()
  if(RIBBON_BUILD_PYTHON STREQUAL "AUTO")
    find_package(Python 3.8 COMPONENTS Interpreter Development.Module)
  else()
    find_package(Python 3.8 REQUIRED COMPONENTS Interpreter Development.Module)
  endif()
  if(Python_FOUND AND NOT nanobind_DIR)
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                    OUTPUT_VARIABLE ribbon_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE ribbon_nanobind_status ERROR_QUIET)
    if(ribbon_nanobind_status EQUAL 0)
      set(nanobind_DIR "${ribbon_nanobind_dir}" CACHE PATH "nanobind's CMake directory")
    endif()
  endif()
  if(Python_FOUND)
    find_package(nanobind CONFIG QUIET)
  endif()
  if(Python_FOUND AND nanobind_FOUND)
    set(RIBBON_WITH_PYTHON ON)
  elseif(NOT RIBBON_BUILD_PYTHON STREQUAL "AUTO")
    message(FATAL_ERROR "RIBBON_BUILD_PYTHON=ON needs Python (with its development headers) and "
                        "nanobind: pip install nanobind, or set Python_EXECUTABLE")
  endif()
endif()
message(STATUS "ribbon: Python extension ${RIBBON_WITH_PYTHON} (RIBBON_BUILD_PYTHON=${RIBBON_BUILD_PYTHON}"
               ", ${Python_EXECUTABLE})")
if(RIBBON_WITH_PYTHON)
  add_subdirectory(python)
endif()

# pip install . / pip wheel .: a wheel that imports on a plain Python image (a Spark executor,
# a slim container) with neither oneTBB nor the CUDA toolkit installed.
if(SKBUILD)
  # The CUDA runtime linked statically into the extension and the CLI: it loads the driver
  # (libcuda.so.1) only on the first GPU call, so CPU work needs no CUDA library at all.
  if(TARGET ribbon_cuda)
    get_target_property(ribbon_cuda_links ribbon_cuda INTERFACE_LINK_LIBRARIES)
    list(TRANSFORM ribbon_cuda_links REPLACE "^CUDA::cudart$" "CUDA::cudart_static")
    if(NOT "CUDA::cudart_static" IN_LIST ribbon_cuda_links)
      message(FATAL_ERROR "ribbon: ribbon_cuda no longer links CUDA::cudart (cuda/CMakeLists.txt): "
                          "update the wheel's static CUDA runtime here")
    endif()
    set_target_properties(ribbon_cuda PROPERTIES INTERFACE_LINK_LIBRARIES "${ribbon_cuda_links}")
  endif()
  # oneTBB goes into the package next to the extension (python/CMakeLists.txt). The `ribbon`
  # command lands in the environment's bin/, so its RPATH leads from there to the package:
  # one entry per install scheme of this Python (venv and --user: ../lib/python3.X/
  # site-packages; Debian's system Python: ../lib/python3.X/dist-packages; lib64 elsewhere).
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c [=[
import os, sysconfig
rpath = []
for scheme in sysconfig.get_scheme_names():
    if scheme.startswith(("nt", "osx")):
        continue
    paths = sysconfig.get_paths(scheme)
    entry = "$ORIGIN/" + os.path.relpath(paths["platlib"], paths["scripts"]) + "/ribbon"
    if entry not in rpath:
        rpath.append(entry)
print(";".join(rpath), end="")
]=]
    OUTPUT_VARIABLE RIBBON_WHEEL_CLI_RPATH RESULT_VARIABLE ribbon_rpath_status)
  if(NOT ribbon_rpath_status EQUAL 0 OR RIBBON_WHEEL_CLI_RPATH STREQUAL "")
    message(FATAL_ERROR "ribbon: could not compute the CLI's RPATH from ${Python_EXECUTABLE}'s "
                        "install schemes")
  endif()
  message(STATUS "ribbon: the wheel's CLI finds the package's oneTBB in "
                 "${RIBBON_WHEEL_CLI_RPATH}")
endif()
