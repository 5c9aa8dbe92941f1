#!/usr/bin/env bash
# The Java reader accepts and rejects exactly the files the C++ reader does: the fuzzing seed
# corpus (tests/fuzz/make_corpus.sh: every variant, width and key kind, and tests/data's
# version-1 files) and corrupted copies of each (mutate.py: bit flips, with and without the
# checksums recomputed, truncations, a trailing byte), checked by `ribbon verify` and by
# `java -jar ribbon.jar verify`, which must throw nothing but its own exception type.
# Usage: compare_corrupt.sh RIBBON_CLI JAVA RIBBON_JAR
set -euo pipefail
ribbon=$(realpath "$1")
java=$2
jar=$(realpath "$3")
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

bash "${here}/../../tests/fuzz/make_corpus.sh" "${ribbon}" "${tmp}/corpus" >/dev/null
mkdir "${tmp}/mutants"
RIBBON_CLI="${ribbon}" python3 "${here}/mutate.py" "${tmp}/mutants" "${tmp}"/corpus/file_reader/*.rbn
files=("${tmp}"/corpus/file_reader/*.rbn "${tmp}"/mutants/*.rbn)

# C++: 0 valid, 2 rejected, per file.
: >"${tmp}/cpp"
for f in "${files[@]}"; do
  rc=0
  "${ribbon}" verify -q "${f}" 2>/dev/null || rc=$?
  echo "${rc}" >>"${tmp}/cpp"
done
# Java: one JVM for all files; OK / FAILED / CRASH per file.
java_rc=0
"${java}" -jar "${jar}" verify "${files[@]}" >"${tmp}/java.out" || java_rc=$?
awk '{ print ($1 == "OK:") ? 0 : ($1 == "FAILED:") ? 2 : 3 }' "${tmp}/java.out" >"${tmp}/java"

total=${#files[@]}
accepted=$(grep -c '^0$' "${tmp}/cpp" || true)
if [[ $(wc -l <"${tmp}/java") -ne ${total} ]] || grep -q '^CRASH' "${tmp}/java.out" || ! cmp -s "${tmp}/cpp" "${tmp}/java"; then
  grep '^CRASH' "${tmp}/java.out" || true
  paste "${tmp}/cpp" "${tmp}/java" | awk -v OFS='\t' '$1 != $2 { print NR, $1, $2 }' | head -20 |
    while IFS=$'\t' read -r n c j; do
      echo "MISMATCH ${files[$((n - 1))]}: ribbon verify ${c}, Java ${j}: $(sed -n "${n}p" "${tmp}/java.out")"
    done
  echo "FAILED: ${total} files (java exit ${java_rc})"
  exit 1
fi
echo "${total} files (${accepted} valid): the same accept/reject decisions"
