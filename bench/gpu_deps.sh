#!/usr/bin/env bash
# Prepares, on the development machine (Debian 12, network), the build dependencies that the
# GPU machine lacks (its image has CUDA and CMake but no oneTBB, GoogleTest, CLI11 or xxHash,
# and nothing can be fetched there): downloads their Debian packages and unpacks them into
# .gpu-deps/root (git-ignored). Then run the GPU check with the folder carried:
#   bench/gpu_deps.sh            # here
#   device run: command "bench/gpu_check.sh", carry [".gpu-deps"]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
packages=(libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libgtest-dev libcli11-dev
          libxxhash-dev libxxhash0)
rm -rf .gpu-deps
mkdir -p .gpu-deps/debs .gpu-deps/root
(cd .gpu-deps/debs && apt-get download "${packages[@]}")
for deb in .gpu-deps/debs/*.deb; do dpkg-deb -x "${deb}" .gpu-deps/root; done
rm -rf .gpu-deps/debs
du -sh .gpu-deps
