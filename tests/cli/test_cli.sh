#!/usr/bin/env bash
# End-to-end tests of the `ribbon` command: build / query / info / verify on real files,
# every input format, and the bad-input cases of issue #3 (each must fail cleanly: exit 2,
# a message naming the file and place, no output file, no temporary file left).
#
# Usage: test_cli.sh RIBBON_BINARY SCRATCH_DIR [GROUP...]
#   GROUP: lines integers query errors files outofcore variants reliability memory groups corpus
#   (default: all). Each case prints PASS, FAIL or SKIP; the script exits 1 if any case failed.
# RIBBON_TEST_SCALE (default 1) scales the number of keys (CI uses 0.1 under sanitizers).
#
# This file parses the arguments and runs the groups; lib.sh holds the shared helpers and
# cases_*.sh the cases: cases_keys.sh (lines, integers, query), cases_errors.sh (errors, files),
# cases_outofcore.sh (outofcore, memory), cases_variants.sh, cases_reliability.sh,
# cases_groups.sh and cases_corpus.sh (the golden corpus of tests/data/corpus).

# `shellcheck -a test_cli.sh` checks the sourced files too (in context; see .shellcheckrc).
# shellcheck source-path=SCRIPTDIR
set -u

if [[ $# -lt 2 ]]; then
  echo "usage: $0 RIBBON_BINARY SCRATCH_DIR [GROUP...]" >&2
  exit 2
fi
RIBBON=$(realpath "$1")
SCRATCH=$2
shift 2
SELECTED=("$@")
[[ ${#SELECTED[@]} -eq 0 ]] && SELECTED=(lines integers query errors files outofcore variants reliability memory groups corpus)

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
D=$(realpath "$SCRATCH")
OUT=$D/.stdout
ERR=$D/.stderr

# Keys per test set: 20000 at scale 1, never fewer than 2000.
N=$(awk -v s="${RIBBON_TEST_SCALE:-1}" 'BEGIN { n = int(20000 * s); print (n < 2000 ? 2000 : n) }')

PASSED=0 FAILED=0 SKIPPED=0 REASON=""

# The helpers and cases sit beside this script, wherever it is run from.
CLI_DIR=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
# shellcheck source=lib.sh
source "$CLI_DIR/lib.sh"
# shellcheck source=cases_keys.sh
source "$CLI_DIR/cases_keys.sh"
# shellcheck source=cases_errors.sh
source "$CLI_DIR/cases_errors.sh"
# shellcheck source=cases_outofcore.sh
source "$CLI_DIR/cases_outofcore.sh"
# shellcheck source=cases_variants.sh
source "$CLI_DIR/cases_variants.sh"
# shellcheck source=cases_reliability.sh
source "$CLI_DIR/cases_reliability.sh"
# shellcheck source=cases_groups.sh
source "$CLI_DIR/cases_groups.sh"
# shellcheck source=cases_corpus.sh
source "$CLI_DIR/cases_corpus.sh"

# ------------------------------------------------------------------------------------------

echo "ribbon: $RIBBON, $N keys per set"
for group in "${SELECTED[@]}"; do
  case "$group" in
    lines | integers | query | errors | files | outofcore | variants | reliability | memory | groups | corpus)
      echo "== $group"
      "group_$group"
      ;;
    *)
      echo "unknown group '$group'" >&2
      exit 2
      ;;
  esac
done
echo "== $PASSED passed, $FAILED failed, $SKIPPED skipped"
[[ $FAILED -eq 0 ]]
