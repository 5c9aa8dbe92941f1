#!/usr/bin/env bash
# The version table's rule cases (tests/format_rule_cases.hpp) for both readers: the C++ tool
# writes them, checking its own reader's verdict on each, then the Java reader must accept and
# reject exactly the same files.
# Usage: check_rule_cases.sh FORMAT_RULE_CASES JAVA RIBBON_JAR
set -euo pipefail
cases=$(realpath "$1")
java=$2
jar=$(realpath "$3")
dir=$(mktemp -d)
trap 'rm -rf "${dir}"' EXIT
"${cases}" "${dir}"
echo "$(wc -l <"${dir}/cases.tsv") cases written, the C++ reader's verdicts as expected"
"${java}" -jar "${jar}" check-cases "${dir}"
