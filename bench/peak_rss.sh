#!/usr/bin/env bash
# Peak resident memory of `ribbon build` against --memory-limit (docs/cli.md, "Memory"): prints a
# markdown table of keys x format x limit x threads -> peak RSS (GNU time's %M, getrusage's
# ru_maxrss), wall time and whether the build ran out of core, and checks that every file is
# byte-identical to the in-memory build of the same keys.
# Usage: bench/peak_rss.sh RIBBON_BINARY SCRATCH_DIR [KEYS...]   (default KEYS: 20000000)
# Environment: LIMITS (default "16M 32M 64M"), THREADS (default "1 2 8"), FORMATS ("u64 lines").
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 RIBBON_BINARY SCRATCH_DIR [KEYS...]" >&2
  exit 2
fi
ribbon=$(realpath "$1")
scratch=$2
shift 2
key_counts=("$@")
[[ ${#key_counts[@]} -eq 0 ]] && key_counts=(20000000)
read -r -a limits <<<"${LIMITS:-16M 32M 64M}"
read -r -a thread_counts <<<"${THREADS:-1 2 8}"
read -r -a formats <<<"${FORMATS:-u64 lines}"
mkdir -p "${scratch}/tmp"

# peak FORMAT INPUT OUTPUT ARGS...: runs one build, prints "peak_kib seconds where".
peak() {
  local format=$1 input=$2 output=$3
  shift 3
  /usr/bin/time -f '%M %e' -o "${scratch}/time" "${ribbon}" build -i "${input}" \
    --format "${format}" -o "${output}" --tmp-dir "${scratch}/tmp" "$@" 2>"${scratch}/err"
  local where="in memory"
  grep -q "out of core" "${scratch}/err" && where="out of core"
  echo "$(tail -n 1 "${scratch}/time") ${where}"
}

echo "| keys | format | --memory-limit | threads | peak RSS (MiB) | limit + 16 MiB | wall (s) | build |"
echo "|---:|---|---:|---:|---:|---:|---:|---|"
for keys in "${key_counts[@]}"; do
  for format in "${formats[@]}"; do
    input=${scratch}/keys-${keys}.${format}
    if [[ ${format} == u64 ]]; then
      head -c $((8 * keys)) /dev/urandom >"${input}"
    else
      seq -f 'key-%.0f' 1 "${keys}" >"${input}"
    fi
    read -r kib seconds where < <(peak "${format}" "${input}" "${scratch}/reference.rbn")
    echo "| ${keys} | ${format} | none | all | $((kib / 1024)) | | ${seconds} | ${where} |"
    for limit in "${limits[@]}"; do
      for threads in "${thread_counts[@]}"; do
        read -r kib seconds where < <(peak "${format}" "${input}" "${scratch}/limited.rbn" \
          --memory-limit "${limit}" --threads "${threads}")
        cmp -s "${scratch}/limited.rbn" "${scratch}/reference.rbn" ||
          { echo "error: --memory-limit ${limit} -t ${threads} wrote other bytes" >&2; exit 1; }
        echo "| ${keys} | ${format} | ${limit} | ${threads} | $((kib / 1024)) |" \
          "$(( ${limit%M} + 16 )) | ${seconds} | ${where} |"
      done
    done
    rm -f "${input}"
  done
done
rm -rf "${scratch}"
