#!/usr/bin/env bash
# One-shot GPU check for a machine with an NVIDIA GPU (run once per device session):
# builds with nvcc, runs the GPU tests, runs `ribbon bench --backend gpu` at 10^8 and 10^9
# keys (w=64, r=8; build from device-resident keys with per-stage times, batched queries on
# device- and host-resident keys), and prints a short table. The table, the JSON lines and the
# test logs go to $OUT (the device tool's output folder) or ./gpu-check-out. The GPU
# machine's image lacks
# oneTBB, GoogleTest, CLI11 and xxHash: run bench/gpu_deps.sh here first and carry .gpu-deps.
#   bench/gpu_check.sh [KEYS...]        default KEYS: 100000000 1000000000
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Logs and JSON go to a work folder; $OUT (at most 8 files come back from the device) gets
# gpu.txt, tests.log, bench.jsonl and table.md.
out="$PWD/build-gpu/check"
final="${OUT:-$PWD/gpu-check-out}"
mkdir -p "${out}" "${final}"
sizes=("$@")
[[ ${#sizes[@]} -eq 0 ]] && sizes=(100000000 1000000000)
jobs="$(nproc)"
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
step() { printf '\n== %s (%ds)\n' "$*" "${SECONDS}"; }

step "GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "${final}/gpu.txt"

# Dependencies the GPU machine's image lacks, carried in by bench/gpu_deps.sh (.gpu-deps).
deps=()
if [[ -d .gpu-deps/root/usr ]]; then
  root="$PWD/.gpu-deps/root/usr"
  arch=x86_64-linux-gnu
  deps=(-DTBB_DIR="${root}/lib/${arch}/cmake/TBB" -DGTest_DIR="${root}/lib/${arch}/cmake/GTest"
        -DCLI11_DIR="$(dirname "$(find "${root}" -name CLI11Config.cmake | head -1)")"
        -DXXHASH_INCLUDE_DIR="${root}/include" -DXXHASH_LIBRARY="${root}/lib/${arch}/libxxhash.a")
  export LD_LIBRARY_PATH="${root}/lib/${arch}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
  echo "using the dependencies in .gpu-deps"
fi

step "build (nvcc ${nvcc}, ${jobs} jobs)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DRIBBON_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="${nvcc}" -DRIBBON_BUILD_BENCHMARKS=OFF "${deps[@]}" \
  >"${out}/configure.log" 2>&1 ||
  { tail -30 "${out}/configure.log"; exit 1; }
cmake --build build-gpu -j"${jobs}" --target ribbon_cli test_cuda test_gpu_pipeline_cuda \
  test_gpu_pipeline_tbb >"${out}/build.log" 2>&1 || { tail -40 "${out}/build.log"; exit 1; }

step "GPU tests"
status=0
for t in test_cuda test_gpu_pipeline_cuda test_gpu_pipeline_tbb; do
  if build-gpu/tests/"${t}" >"${out}/${t}.log" 2>&1; then
    echo "${t}: $(grep -E '^\[  (PASSED|SKIPPED) +\] [0-9]+ test' "${out}/${t}.log" | tr '\n' ' ')"
    # On a GPU machine a skipped GPU test means the device was not usable: a failure here.
    if grep -q 'GPU test skipped' "${out}/${t}.log"; then
      status=1
      grep -m1 'GPU test skipped' "${out}/${t}.log"
    fi
  else
    status=1
    echo "${t}: FAILED"
    grep -E 'FAILED|Failure|error' "${out}/${t}.log" | head -20
  fi
done

step "ribbon bench --backend gpu"
# Runs are KEYS:SHARD:VARIANT:WIDTH.
runs=()
for n in "${sizes[@]}"; do runs+=("${n}:0:bumped:64"); done
# The shard size sets the solve kernel's parallelism (a thread per shard): the smallest legal
# one at w=64 (32 buckets of 128) on the first size, for comparison.
runs+=("${sizes[0]}:4096:bumped:64")
# The other filter variants (issue #5) at the first size.
runs+=("${sizes[0]}:0:standard:128" "${sizes[0]}:0:homogeneous:128")
for run in "${runs[@]}"; do
  IFS=: read -r n shard variant width <<<"${run}"
  tag="${n}-s${shard}-${variant}-w${width}"
  # Non-members: as many as keys up to 10^8 (host memory for both sets).
  negatives=$((n < 100000000 ? n : 100000000))
  if build-gpu/tools/ribbon bench --backend gpu -n "${n}" --negatives "${negatives}" \
    -w "${width}" -r 8 --variant "${variant}" --shard-size "${shard}" --json \
    >"${out}/bench-${tag}.json" 2>"${out}/bench-${tag}.err"; then
    cat "${out}/bench-${tag}.json"
  else
    status=1
    echo "bench ${tag}: FAILED"
    tail -5 "${out}/bench-${tag}.err"
  fi
done

cat "${out}"/test_*.log >"${final}/tests.log" 2>/dev/null
cat "${out}"/bench-*.json >"${final}/bench.jsonl" 2>/dev/null

step "table"
if command -v python3 >/dev/null 2>&1; then
  python3 - "${out}" "${runs[@]}" <<'PY' | tee "${final}/table.md"
import json, sys
out, runs = sys.argv[1], sys.argv[2:]
print("| keys | shard size | variant | w | build s | keys/s | hash / sort / solve / compact / download s "
      "| same bytes as CPU | bits/key | FPR | false neg. "
      "| queries/s device members / device non-members / host |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for run in runs:
    n, shard, variant, width = run.split(":")
    try:
        r = json.load(open(f"{out}/bench-{n}-s{shard}-{variant}-w{width}.json"))
    except Exception as e:
        print(f"| {n} | {shard} | {variant} | {width} | failed: {e} |"); continue
    s, q = r["stage_seconds"], r["query_keys_per_second"]
    print(f"| {r['keys']:.0e} | {r['shard_size']} | {variant} | {width} | "
          f"{r['build_seconds']:.4f} | "
          f"{r['build_keys_per_second']:.3e} | "
          f"{s['hash']:.4f} / {s['sort']:.4f} / {s['solve']:.4f} / {s['compact']:.4f} / "
          f"{s['download']:.4f} | {r['identical_to_cpu']} | {r['bits_per_key']:.4f} | "
          f"{r['fpr_measured']:.5f} | {r['false_negatives']} | {q['device_members']:.3e} / "
          f"{q['device_negatives']:.3e} / {q['host_negatives']:.3e} |")
PY
fi
step "done, status ${status}"
exit "${status}"
