#!/usr/bin/env bash
# End-to-end tests of the `ribbon` command: build / query / info / verify on real files,
# every input format, and the bad-input cases of issue #3 (each must fail cleanly: exit 2,
# a message naming the file and place, no output file, no temporary file left).
#
# Usage: test_cli.sh RIBBON_BINARY SCRATCH_DIR [GROUP...]
#   GROUP: lines integers query errors files outofcore variants reliability memory (default: all). Each case prints
#   PASS, FAIL or SKIP; the script exits 1 if any case failed.
# RIBBON_TEST_SCALE (default 1) scales the number of keys (CI uses 0.1 under sanitizers).

# SC2002: `cat FILE | ribbon` is on purpose: stdin must be a pipe, not a redirected file.
# shellcheck disable=SC2002
set -u

if [[ $# -lt 2 ]]; then
  echo "usage: $0 RIBBON_BINARY SCRATCH_DIR [GROUP...]" >&2
  exit 2
fi
RIBBON=$(realpath "$1")
SCRATCH=$2
shift 2
SELECTED=("$@")
[[ ${#SELECTED[@]} -eq 0 ]] && SELECTED=(lines integers query errors files outofcore variants reliability memory)

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
D=$(realpath "$SCRATCH")
OUT=$D/.stdout
ERR=$D/.stderr

# Keys per test set: 20000 at scale 1, never fewer than 2000.
N=$(awk -v s="${RIBBON_TEST_SCALE:-1}" 'BEGIN { n = int(20000 * s); print (n < 2000 ? 2000 : n) }')

PASSED=0 FAILED=0 SKIPPED=0 REASON=""

fail() {
  REASON="$*"
  return 1
}
skip() {
  REASON="$*"
  return 77
}

# t NAME FUNCTION: runs one case and reports it.
t() {
  local name=$1 status
  REASON=""
  "$2"
  status=$?
  if [[ $status -eq 0 ]]; then
    echo "PASS $name"
    PASSED=$((PASSED + 1))
  elif [[ $status -eq 77 ]]; then
    echo "SKIP $name: $REASON"
    SKIPPED=$((SKIPPED + 1))
  else
    echo "FAIL $name: $REASON"
    FAILED=$((FAILED + 1))
  fi
}

# run ARGS...: runs ribbon with stdin from /dev/null; sets RC, OUT and ERR hold its output.
run() {
  "$RIBBON" "$@" </dev/null >"$OUT" 2>"$ERR"
  RC=$?
}
# run_in FILE ARGS...: the same with stdin from FILE.
run_in() {
  local input=$1
  shift
  "$RIBBON" "$@" <"$input" >"$OUT" 2>"$ERR"
  RC=$?
}

stderr_text() { head -c 600 "$ERR" | tr '\n' '|'; }
rc_is() {
  [[ $RC -eq $1 ]] || fail "exit status $RC, expected $1 (ribbon $2); stderr: $(stderr_text)"
}
err_has() {
  grep -qF -- "$1" "$ERR" || fail "stderr lacks '$1': $(stderr_text)"
}
out_has() {
  grep -qF -- "$1" "$OUT" || fail "stdout lacks '$1': $(head -c 600 "$OUT" | tr '\n' '|')"
}
out_is() {
  [[ "$(cat "$OUT")" == "$1" ]] || fail "stdout is '$(head -c 300 "$OUT")', expected '$1'"
}
same_file() {
  cmp -s "$1" "$2" || fail "$(basename "$1") and $(basename "$2") differ"
}
absent() {
  [[ ! -e "$1" ]] || fail "$1 exists but should not"
}
# Only the named entries in a directory (no partial output, no temporary files).
dir_holds() {
  local dir=$1
  shift
  local have want
  # shellcheck disable=SC2012  # the names are the test's own
  have=$(ls -A "$dir" | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
  [[ "$have" == "$want" ]] || fail "$dir holds '$have', expected '$want'"
}

# A build that must succeed; extra arguments are passed on.
build_ok() {
  run build "$@"
  rc_is 0 "build $*"
}

# u64 keys: in binary (little-endian), hex (mixed styles, some CRLF) and decimal.
make_integer_keys() {
  perl -e '
    my ($n, $dir) = @ARGV;
    open(my $bin, ">", "$dir/ints.u64") or die;
    open(my $hex, ">", "$dir/ints.hex") or die;
    open(my $dec, ">", "$dir/ints.dec") or die;
    binmode $bin;
    for my $i (0 .. $n - 1) {
      my $x = ((($i * 2654435761) % 4294967296) << 32) | $i;
      $x = 18446744073709551615 if $i == 1;
      my $s = $i % 4;
      my $h = $s == 0 ? sprintf("%x", $x) : $s == 1 ? sprintf("0x%016X", $x)
            : $s == 2 ? sprintf("0X%x\r", $x) : sprintf("%016x", $x);
      print $bin pack("Q<", $x);
      print $hex "$h\n";
      print $dec "$x\n";
    }' "$N" "$D"
}

make_line_keys() {
  seq -f 'key-%.0f' 1 "$N" >"$D/keys.txt"
  seq -f 'other-%.0f' 1 1000 >"$D/others.txt"
}

# ------------------------------------------------------------------------------------------
# lines: the `lines` format's key semantics, chunking, several inputs, stdin.

case_lines_round_trip() {
  build_ok -i "$D/keys.txt" -o "$D/keys.rbn" -r 16 || return 1
  run query "$D/keys.rbn" -i "$D/keys.txt"
  rc_is 0 query || return 1
  same_file "$OUT" "$D/keys.txt" || return 1
  run query "$D/keys.rbn" -i "$D/keys.txt" --count
  rc_is 0 "query --count" || return 1
  out_is "$N queried, $N positive"
}

case_lines_crlf_empty_last_line() {
  local long
  long=$(head -c 3000 /dev/zero | tr '\0' 'x')
  # CRLF lines, empty lines (a key: the empty string), a line longer than the chunk size, a
  # last line without "\n", and "\r" inside a line (part of the key).
  printf 'alpha\r\n\nbeta\n\r\n%s\nmid\rdle\ngamma' "$long" >"$D/special.txt"
  printf 'alpha\n\nbeta\n\n%s\nmid\rdle\ngamma\n' "$long" >"$D/normal.txt"
  RIBBON_CLI_CHUNK_BYTES=64 build_ok -i "$D/special.txt" -o "$D/special-small.rbn" -r 16 ||
    return 1
  build_ok -i "$D/special.txt" -o "$D/special.rbn" -r 16 || return 1
  build_ok -i "$D/normal.txt" -o "$D/normal.rbn" -r 16 || return 1
  same_file "$D/special-small.rbn" "$D/special.rbn" || return 1
  same_file "$D/special.rbn" "$D/normal.rbn" || return 1
  run query "$D/special.rbn" alpha beta gamma "" "$long" "mid$(printf '\r')dle" --count
  out_is "6 queried, 6 positive" || return 1
  printf 'gamma\r\nalpha\n' >"$D/probe.txt"
  run query "$D/special.rbn" -i "$D/probe.txt"
  rc_is 0 query || return 1
  out_is "$(printf 'gamma\nalpha')" || return 1
  # Without an empty line, the empty key is not in the set.
  printf 'alpha\nbeta\n' >"$D/two.txt"
  build_ok -i "$D/two.txt" -o "$D/two.rbn" -r 16 || return 1
  run query "$D/two.rbn" ""
  rc_is 1 "query ''" || return 1
  out_is ""
}

case_lines_trailing_newline() {
  printf 'alpha\nbeta\n' >"$D/nl.txt"
  printf 'alpha\nbeta' >"$D/no-nl.txt"
  build_ok -i "$D/nl.txt" -o "$D/nl.rbn" || return 1
  build_ok -i "$D/no-nl.txt" -o "$D/no-nl.rbn" || return 1
  same_file "$D/nl.rbn" "$D/no-nl.rbn" || return 1
  run info --json "$D/nl.rbn"
  out_has '"key_count": 2,'
}

case_lines_long_lines_small_chunks() {
  # Every line is longer than the chunk: the buffer must grow, keys stay whole.
  awk -v n=300 'BEGIN { for (i = 1; i <= n; i++) { s = sprintf("%05d", i); while (length(s) < 200 + i) s = s "y"; print s } }' \
    >"$D/long.txt"
  RIBBON_CLI_CHUNK_BYTES=16 build_ok -i "$D/long.txt" -o "$D/long-small.rbn" -r 16 || return 1
  build_ok -i "$D/long.txt" -o "$D/long.rbn" -r 16 || return 1
  same_file "$D/long-small.rbn" "$D/long.rbn" || return 1
  RIBBON_CLI_CHUNK_BYTES=16 run query "$D/long.rbn" -i "$D/long.txt"
  rc_is 0 query || return 1
  same_file "$OUT" "$D/long.txt"
}

case_lines_chunking_does_not_matter() {
  RIBBON_CLI_CHUNK_BYTES=100 build_ok -i "$D/keys.txt" -o "$D/keys-100.rbn" -r 16 -t 2 || return 1
  build_ok -i "$D/keys.txt" -o "$D/keys-1t.rbn" -r 16 -t 1 || return 1
  same_file "$D/keys-100.rbn" "$D/keys.rbn" || return 1
  same_file "$D/keys-1t.rbn" "$D/keys.rbn"
}

case_stdin() {
  run_in "$D/keys.txt" build -o "$D/stdin-redirect.rbn" -r 16
  rc_is 0 "build < file" || return 1
  same_file "$D/stdin-redirect.rbn" "$D/keys.rbn" || return 1
  cat "$D/keys.txt" | "$RIBBON" build -i - -o "$D/stdin-pipe.rbn" -r 16 2>"$ERR"
  RC=$?
  rc_is 0 "build -i - from a pipe" || return 1
  same_file "$D/stdin-pipe.rbn" "$D/keys.rbn" || return 1
  cat "$D/keys.txt" | "$RIBBON" query "$D/keys.rbn" --count >"$OUT" 2>"$ERR"
  out_is "$N queried, $N positive"
}

case_several_inputs() {
  local half=$((N / 2))
  head -n "$half" "$D/keys.txt" >"$D/part1.txt"
  tail -n +"$((half + 1))" "$D/keys.txt" | head -n 10 >"$D/part2.txt"
  tail -n +"$((half + 11))" "$D/keys.txt" >"$D/part3.txt"
  build_ok -i "$D/part1.txt" -i "$D/part2.txt" -i "$D/part3.txt" -o "$D/parts.rbn" -r 16 ||
    return 1
  same_file "$D/parts.rbn" "$D/keys.rbn" || return 1
  cat "$D/part2.txt" | "$RIBBON" build -i "$D/part1.txt" -i - -i "$D/part3.txt" \
    -o "$D/parts-stdin.rbn" -r 16 2>"$ERR"
  RC=$?
  rc_is 0 "build with - among files" || return 1
  same_file "$D/parts-stdin.rbn" "$D/keys.rbn" || return 1
  # A file's last line ends at its end: it does not run on into the next file.
  printf 'ab' >"$D/x1.txt"
  printf 'cd\n' >"$D/x2.txt"
  printf 'ab\ncd\n' >"$D/x12.txt"
  build_ok -i "$D/x1.txt" -i "$D/x2.txt" -o "$D/x-parts.rbn" || return 1
  build_ok -i "$D/x12.txt" -o "$D/x-whole.rbn" || return 1
  same_file "$D/x-parts.rbn" "$D/x-whole.rbn"
}

group_lines() {
  make_line_keys
  t lines.round_trip case_lines_round_trip
  t lines.crlf_empty_lines_last_line case_lines_crlf_empty_last_line
  t lines.trailing_newline_adds_no_key case_lines_trailing_newline
  t lines.lines_longer_than_a_chunk case_lines_long_lines_small_chunks
  t lines.chunk_size_and_threads_do_not_matter case_lines_chunking_does_not_matter
  t lines.stdin case_stdin
  t lines.several_inputs_equal_their_concatenation case_several_inputs
}

# ------------------------------------------------------------------------------------------
# integers: u64 and hex64.

case_u64_round_trip() {
  build_ok -i "$D/ints.u64" --format u64 -o "$D/ints-u64.rbn" -r 16 || return 1
  run query "$D/ints-u64.rbn" -i "$D/ints.u64" --format u64
  rc_is 0 query || return 1
  same_file "$OUT" "$D/ints.dec" || return 1
  RIBBON_CLI_CHUNK_BYTES=20 build_ok -i "$D/ints.u64" --format u64 -o "$D/ints-u64-small.rbn" \
    -r 16 || return 1
  same_file "$D/ints-u64-small.rbn" "$D/ints-u64.rbn"
}

case_hex64_equals_u64() {
  build_ok -i "$D/ints.hex" --format hex64 -o "$D/ints-hex.rbn" -r 16 || return 1
  same_file "$D/ints-hex.rbn" "$D/ints-u64.rbn" || return 1
  run query "$D/ints-hex.rbn" -i "$D/ints.hex" --format hex64
  rc_is 0 query || return 1
  tr -d '\r' <"$D/ints.hex" >"$D/ints-nocr.hex"
  same_file "$OUT" "$D/ints-nocr.hex" || return 1
  # The same numbers queried in the other format.
  run query "$D/ints-hex.rbn" -i "$D/ints.u64" --format u64 --count
  out_is "$N queried, $N positive"
}

case_integer_arguments() {
  run query "$D/ints-u64.rbn" --format u64 18446744073709551615 0 1
  rc_is 0 "query u64 arguments" || return 1
  out_has 18446744073709551615 || return 1
  run query "$D/ints-u64.rbn" --format hex64 0xFFFFFFFFFFFFFFFF ffffffffffffffff
  rc_is 0 "query hex64 arguments" || return 1
  out_is "$(printf '0xFFFFFFFFFFFFFFFF\nffffffffffffffff')" || return 1
  run query "$D/ints-u64.rbn" --format u64 12x
  rc_is 2 "query u64 '12x'" || return 1
  err_has "12x" || return 1
  run query "$D/ints-u64.rbn" --format u64 18446744073709551616
  rc_is 2 "query u64 2^64" || return 1
  run query "$D/ints-u64.rbn" --format hex64 0x
  rc_is 2 "query hex64 '0x'" || return 1
  run query "$D/ints-u64.rbn" --format hex64 10000000000000000
  rc_is 2 "query hex64 with 17 digits"
}

case_key_kind_mismatch() {
  run query "$D/ints-u64.rbn" abc
  rc_is 2 "query an integer filter with lines" || return 1
  err_has "64-bit integer keys" || return 1
  err_has "--format lines" || return 1
  run verify "$D/ints-u64.rbn" -i "$D/ints.dec"
  rc_is 2 "verify an integer filter with lines" || return 1
  printf 'a\n' >"$D/a.txt"
  build_ok -i "$D/a.txt" -o "$D/a.rbn" || return 1
  run query "$D/a.rbn" --format u64 1
  rc_is 2 "query a lines filter with u64" || return 1
  err_has "byte-string keys"
}

group_integers() {
  make_integer_keys
  t integers.u64_round_trip case_u64_round_trip
  t integers.hex64_identical_to_u64 case_hex64_equals_u64
  t integers.key_arguments case_integer_arguments
  t integers.key_kind_mismatch case_key_kind_mismatch
}

# ------------------------------------------------------------------------------------------
# query, verify, info.

case_query_prints_members() {
  # Members and non-members interleaved: every member printed, in order; at r=16 the
  # non-members are almost never positive (expected N * 2^-16 < 1).
  paste -d '\n' "$D/keys.txt" <(seq -f 'absent-%.0f' 1 "$N") >"$D/mixed.txt"
  run query "$D/keys.rbn" -i "$D/mixed.txt"
  rc_is 0 query || return 1
  grep -v '^absent-' "$OUT" >"$D/members-printed.txt"
  same_file "$D/members-printed.txt" "$D/keys.txt" || return 1
  local false_positives
  false_positives=$(grep -c '^absent-' "$OUT")
  [[ $false_positives -le 5 ]] || fail "$false_positives false positives at r=16" || return 1
  run query "$D/keys.rbn" -i "$D/mixed.txt" --count
  rc_is 0 "query --count" || return 1
  out_is "$((2 * N)) queried, $((N + false_positives)) positive"
}

case_query_exit_status() {
  run query "$D/keys.rbn" -i "$D/others.txt"
  rc_is 1 "query of non-members" || return 1
  [[ ! -s "$OUT" ]] || fail "printed $(wc -l <"$OUT") keys" || return 1
  run query "$D/keys.rbn" -i "$D/others.txt" --count
  rc_is 1 "query --count of non-members" || return 1
  out_is "1000 queried, 0 positive" || return 1
  run query "$D/keys.rbn" other-1 key-7 other-2
  rc_is 0 "query with one member" || return 1
  out_is "key-7" || return 1
  run query "$D/keys.rbn" -i "$D/missing-file.txt"
  rc_is 2 "query of a missing key file"
}

case_verify() {
  run verify "$D/keys.rbn"
  rc_is 0 verify || return 1
  out_has "OK" || return 1
  run verify "$D/keys.rbn" -i "$D/keys.txt"
  rc_is 0 "verify -i keys" || return 1
  out_has "OK" || return 1
  out_has "$N keys" || return 1
  # A superset with 1000 keys not in the set: at r=16 all 1000 being false positives has
  # probability 2^-16000.
  cat "$D/keys.txt" "$D/others.txt" >"$D/superset.txt"
  run verify "$D/keys.rbn" -i "$D/superset.txt"
  rc_is 1 "verify -i superset" || return 1
  out_has "FAILED" || return 1
  out_has "of $((N + 1000)) keys are not in the filter" || return 1
  out_has "'other-1' (" || return 1
  out_has "superset.txt:$((N + 1)))" || return 1
  run verify "$D/keys.rbn" -i "$D/superset.txt" --quiet
  rc_is 1 "verify --quiet" || return 1
  [[ ! -s "$OUT" ]] || fail "verify --quiet printed something"
}

case_info() {
  run info "$D/keys.rbn" --json
  rc_is 0 "info --json" || return 1
  local field
  for field in '"key_count": '"$N"',' '"format_version": 3,' '"threshold_encoding": "1+-bit",' '"key_kind": "bytes",' \
    '"result_bits": 16,' '"width": 64,' \
    '"layers": [' '"bumped_fraction": ' '"seed": 0,' '"file_bytes": '"$(stat -c %s "$D/keys.rbn")"','; do
    out_has "$field" || return 1
  done
  if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool "$OUT" >/dev/null || fail "info --json is not valid JSON" || return 1
  fi
  # The file does not record which builder wrote it (all write the same bytes).
  ! grep -q builder "$OUT" || fail "info --json has a builder field" || return 1
  run info "$D/keys.rbn"
  rc_is 0 info || return 1
  out_has "distinct keys   $N" || return 1
  out_has "layer 0" || return 1
  out_has "expected FPR" || return 1
  # --shard-size is recorded in the file; a bad one is an error.
  build_ok -i "$D/keys.txt" -o "$D/small-shards.rbn" --shard-size 4096 || return 1
  run info --json "$D/small-shards.rbn"
  out_has '"shard_size": 4096,' || return 1
  run build -i "$D/keys.txt" -o "$D/bad-shards.rbn" --shard-size 1000
  rc_is 2 "build --shard-size 1000" || return 1
  err_has "shard size" || return 1
  absent "$D/bad-shards.rbn"
}

case_empty_input() {
  : >"$D/empty.txt"
  build_ok -i "$D/empty.txt" -o "$D/empty.rbn" || return 1
  run verify "$D/empty.rbn"
  rc_is 0 "verify of the empty filter" || return 1
  run query "$D/empty.rbn" -i "$D/keys.txt"
  rc_is 1 "query of the empty filter" || return 1
  run info --json "$D/empty.rbn"
  out_has '"key_count": 0,' || return 1
  run_in /dev/null build -o "$D/empty-stdin.rbn" --format u64
  rc_is 0 "build --format u64 < /dev/null" || return 1
  run verify "$D/empty-stdin.rbn" -i /dev/null --format u64
  rc_is 0 "verify of the empty u64 filter"
}

case_help() {
  local command
  for command in build query info verify bench; do
    run "$command" --help
    rc_is 0 "$command --help" || return 1
    out_has "Usage" || return 1
  done
  run build --help
  out_has "--memory-limit" || return 1
  out_has "{cpu,gpu,auto}=cpu" || return 1  # the default backend
  run bench --help
  out_has "cpu (default" || return 1
  run --help
  rc_is 0 --help || return 1
  run frobnicate
  rc_is 2 "unknown subcommand"
}

# setup_keys_filter GROUP: builds $D/keys.rbn (r = 16) from $D/keys.txt for a group's cases;
# on failure counts one failure for the group and returns non-zero.
setup_keys_filter() {
  build_ok -i "$D/keys.txt" -o "$D/keys.rbn" -r 16 && return 0
  echo "FAIL $1.setup: $REASON"
  FAILED=$((FAILED + 1))
  return 1
}

group_query() {
  make_line_keys
  setup_keys_filter query || return 0
  t query.prints_exactly_the_members case_query_prints_members
  t query.exit_status case_query_exit_status
  t verify.ok_and_missing_keys case_verify
  t info.fields case_info
  t build.empty_input case_empty_input
  t help case_help
}

# ------------------------------------------------------------------------------------------
# errors: bad input and bad options.

case_missing_input() {
  run build -i "$D/no-such-file.txt" -o "$D/out/missing.rbn"
  rc_is 2 "build of a missing file" || return 1
  err_has "no-such-file.txt" || return 1
  err_has "No such file or directory" || return 1
  dir_holds "$D/out"
}

# Permissions do not stop root: as root, permission cases run as user nobody (setpriv)
# in a world-writable directory, or are skipped. Sets AS_USER to the command prefix.
unprivileged() {
  mkdir -p "$D/world"
  chmod 777 "$D/world"
  AS_USER=()
  [[ $(id -u) -ne 0 ]] && return 0
  command -v setpriv >/dev/null 2>&1 || return 1
  AS_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  "${AS_USER[@]}" "$RIBBON" --help >/dev/null 2>&1 && "${AS_USER[@]}" test -w "$D/world"
}

case_unreadable_input() {
  unprivileged || skip "running as root without setpriv: root can read a chmod 000 file" ||
    return
  printf 'a\n' >"$D/world/unreadable.txt"
  chmod 000 "$D/world/unreadable.txt"
  "${AS_USER[@]}" "$RIBBON" build -i "$D/world/unreadable.txt" -o "$D/world/unreadable.rbn" \
    </dev/null >"$OUT" 2>"$ERR"
  RC=$?
  rc_is 2 "build of an unreadable file" || return 1
  err_has "unreadable.txt" || return 1
  err_has "Permission denied" || return 1
  dir_holds "$D/world" unreadable.txt
}

case_directory_input() {
  run build -i "$D/out" -o "$D/out/dir.rbn"
  rc_is 2 "build of a directory" || return 1
  err_has "is a directory" || return 1
  dir_holds "$D/out"
}

case_invalid_hex_line() {
  {
    seq 1 499 | awk '{ printf "%x\n", $1 }'
    echo "12g4"
    seq 1 10
  } >"$D/bad.hex"
  RIBBON_CLI_CHUNK_BYTES=64 run build -i "$D/bad.hex" --format hex64 -o "$D/out/bad.rbn"
  rc_is 2 "build of an invalid hex64 line" || return 1
  err_has "bad.hex:500:" || return 1
  err_has "12g4" || return 1
  dir_holds "$D/out" || return 1
  # The line count runs per file: the second file's line 3.
  printf '1\n2\n\n4\n' >"$D/empty-line.hex"
  run build -i "$D/ints.hex" -i "$D/empty-line.hex" --format hex64 -o "$D/out/bad.rbn"
  rc_is 2 "build of an empty hex64 line" || return 1
  err_has "empty-line.hex:3:" || return 1
  err_has "empty line" || return 1
  printf '0x\n' | "$RIBBON" build --format hex64 -o "$D/out/bad.rbn" 2>"$ERR"
  RC=$?
  rc_is 2 "build of '0x' from stdin" || return 1
  err_has "<stdin>:1:" || return 1
  dir_holds "$D/out"
}

case_u64_size_not_multiple_of_8() {
  head -c 83 "$D/ints.u64" >"$D/odd.u64"
  run build -i "$D/odd.u64" --format u64 -o "$D/out/odd.rbn"
  rc_is 2 "build of an 83-byte u64 file" || return 1
  err_has "odd.u64" || return 1
  err_has "83 bytes" || return 1
  err_has "3 trailing bytes at offset 80" || return 1
  dir_holds "$D/out" || return 1
  cat "$D/odd.u64" | "$RIBBON" build --format u64 -o "$D/out/odd.rbn" 2>"$ERR"
  RC=$?
  rc_is 2 "build of 83 bytes of u64 from a pipe" || return 1
  err_has "<stdin>" || return 1
  err_has "offset 80" || return 1
  dir_holds "$D/out"
}

case_bad_options() {
  # Where this build has CUDA and a GPU is present, --backend gpu must write the CPU's bytes;
  # elsewhere it is an error that says why.
  run build -i "$D/keys.txt" -o "$D/out/gpu.rbn" --backend gpu
  if [[ $RC -eq 0 ]]; then
    build_ok -i "$D/keys.txt" -o "$D/out/cpu.rbn" --backend cpu || return 1
    same_file "$D/out/gpu.rbn" "$D/out/cpu.rbn" || return 1
    rm -f "$D/out/gpu.rbn" "$D/out/cpu.rbn"
  else
    rc_is 2 "build --backend gpu" || return 1
    err_has "the GPU backend" || return 1
  fi
  local size
  for size in 12Q abc 1.5 -5 "" 64KB 1e6 99999999999T; do
    run build -i "$D/keys.txt" -o "$D/out/x.rbn" --memory-limit "$size"
    rc_is 2 "build --memory-limit '$size'" || return 1
    err_has "--memory-limit" || return 1
  done
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --progress --quiet
  rc_is 2 "build --progress --quiet" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --fpr 0.01 --bits 7
  rc_is 2 "build --fpr --bits" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --width 48
  rc_is 2 "build --width 48" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --format csv
  rc_is 2 "build --format csv" || return 1
  run build -i "$D/keys.txt"
  rc_is 2 "build without -o" || return 1
  dir_holds "$D/out" || return 1
  # Accepted sizes and backends.
  for size in 0 1048576 64K 64k 1.5M 2MiB 1G 1gib; do
    run build -i "$D/a.txt" -o "$D/out/x.rbn" --memory-limit "$size" --backend auto -q
    rc_is 0 "build --memory-limit '$size'" || return 1
    [[ ! -s "$ERR" ]] || fail "--quiet printed: $(stderr_text)" || return 1
  done
  rm -f "$D/out/x.rbn"
}

case_summary_line() {
  run build -i "$D/keys.txt" -o "$D/out/summary.rbn" --bits 10
  rc_is 0 build || return 1
  local part
  for part in "summary.rbn" "$N keys" "bits/key" "over r=10" "expected FPR 2^-10" "keys/s" \
    "/s input" "in memory"; do
    err_has "$part" || return 1
  done
  # The CPU builds by default, GPU or not, until a GPU run is recorded (bench/RESULTS.md).
  ! grep -qF "on the GPU" "$ERR" || fail "the default backend is not the CPU: $(stderr_text)" ||
    return 1
  # --fpr: fractional bits per key (r = 9 and r = 10 blocks), the overhead over log2(1/P).
  run build -i "$D/keys.txt" -o "$D/out/summary.rbn" --fpr 0.001
  rc_is 0 "build --fpr 0.001" || return 1
  for part in "$N keys" "bits/key" "over log2(1/FPR) = 9.966" "expected FPR 0.001" "in memory"; do
    err_has "$part" || return 1
  done
  rm -f "$D/out/summary.rbn"
}

case_progress_output() {
  # Not a terminal: one plain line per finished stage, then the summary.
  run build -i "$D/keys.txt" -o "$D/out/progress.rbn"
  rc_is 0 build || return 1
  err_has "ribbon build: read $N keys" || return 1
  grep -qF $'\033[K' "$ERR" && fail "live progress line without a terminal or --progress" &&
    return 1
  # --progress: the live line (carriage return, clear to end of line) even here.
  run build -i "$D/keys.txt" -o "$D/out/progress.rbn" --progress
  rc_is 0 "build --progress" || return 1
  grep -qF $'\r\033[K' "$ERR" || fail "no live progress line with --progress" || return 1
  err_has "keys/s" || return 1
  # --quiet: nothing at all.
  run build -i "$D/keys.txt" -o "$D/out/progress.rbn" --quiet
  rc_is 0 "build --quiet" || return 1
  [[ ! -s "$ERR" && ! -s "$OUT" ]] || fail "build --quiet printed something" || return 1
  rm -f "$D/out/progress.rbn"
}

case_no_input_on_a_terminal() {
  if ! command -v script >/dev/null 2>&1 || ! script -qec true /dev/null >/dev/null 2>&1; then
    skip "no usable script(1) to give the build a terminal"
    return
  fi
  script -qec "'$RIBBON' build -o '$D/out/tty.rbn'" /dev/null >"$OUT" 2>&1
  RC=$?
  rc_is 2 "build with a terminal as stdin" || return 1
  out_has "no input: give -i FILE or pipe keys into stdin" || return 1
  dir_holds "$D/out"
}

group_errors() {
  make_line_keys
  make_integer_keys
  printf 'a\n' >"$D/a.txt"
  mkdir -p "$D/out"
  t errors.missing_input case_missing_input
  t errors.unreadable_input case_unreadable_input
  t errors.directory_input case_directory_input
  t errors.invalid_hex64_line_names_file_and_line case_invalid_hex_line
  t errors.u64_size_not_multiple_of_8 case_u64_size_not_multiple_of_8
  t errors.bad_options case_bad_options
  t build.summary_line case_summary_line
  t build.progress_output case_progress_output
  t errors.no_input_on_a_terminal case_no_input_on_a_terminal
}

# ------------------------------------------------------------------------------------------
# files: output paths, full disks, damaged filter files.

case_unwritable_output() {
  run build -i "$D/keys.txt" -o "$D/no-such-dir/out.rbn"
  rc_is 2 "build into a missing directory" || return 1
  err_has "no-such-dir/out.rbn" || return 1
  err_has "No such file or directory" || return 1
  run build -i "$D/keys.txt" -o "$D/keys.txt/out.rbn"
  rc_is 2 "build under a regular file" || return 1
  err_has "Not a directory" || return 1
  run build -i "$D/keys.txt" -o "$D"
  rc_is 2 "build onto a directory" || return 1
  err_has "is a directory"
}

case_read_only_output_dir() {
  unprivileged || skip "running as root without setpriv: root can write anywhere" || return
  mkdir -p "$D/world/readonly"
  chmod 555 "$D/world/readonly"
  "${AS_USER[@]}" "$RIBBON" build -i "$D/keys.txt" -o "$D/world/readonly/out.rbn" \
    </dev/null >"$OUT" 2>"$ERR"
  RC=$?
  chmod 755 "$D/world/readonly"
  rc_is 2 "build into a read-only directory" || return 1
  err_has "readonly/out.rbn" || return 1
  err_has "Permission denied" || return 1
  dir_holds "$D/world/readonly"
}

case_full_disk() {
  mkdir -p "$D/full"
  # A file size limit (ulimit -f, in KiB) stands in for a full disk: write() fails with
  # EFBIG once SIGXFSZ is ignored.
  (
    trap '' XFSZ
    ulimit -f 1
    "$RIBBON" build -i "$D/keys.txt" -o "$D/full/out.rbn" -r 16 </dev/null >"$OUT" 2>"$ERR"
  )
  RC=$?
  rc_is 2 "build past the file size limit" || return 1
  err_has "out.rbn" || return 1
  err_has "File too large" || return 1
  dir_holds "$D/full"
}

case_existing_output_kept() {
  mkdir -p "$D/keep"
  build_ok -i "$D/keys.txt" -o "$D/keep/out.rbn" -r 16 || return 1
  cp "$D/keep/out.rbn" "$D/saved.rbn"
  printf 'zz\n' >"$D/bad.hex"
  run build -i "$D/bad.hex" --format hex64 -o "$D/keep/out.rbn"
  rc_is 2 "build of bad input over an existing file" || return 1
  same_file "$D/keep/out.rbn" "$D/saved.rbn" || return 1
  (
    trap '' XFSZ
    ulimit -f 1
    "$RIBBON" build -i "$D/keys.txt" -o "$D/keep/out.rbn" -r 8 </dev/null >"$OUT" 2>"$ERR"
  )
  RC=$?
  rc_is 2 "build past the file size limit over an existing file" || return 1
  same_file "$D/keep/out.rbn" "$D/saved.rbn" || return 1
  dir_holds "$D/keep" out.rbn || return 1
  # A successful build replaces it.
  build_ok -i "$D/a.txt" -o "$D/keep/out.rbn" || return 1
  run info --json "$D/keep/out.rbn"
  out_has '"key_count": 1,' || return 1
  dir_holds "$D/keep" out.rbn
}

# damaged_filter_fails FILE MESSAGE: query, info and verify all exit 2 naming the problem.
damaged_filter_fails() {
  run query "$1" key-1
  rc_is 2 "query of $(basename "$1")" || return 1
  err_has "$2" || return 1
  run info "$1"
  rc_is 2 "info of $(basename "$1")" || return 1
  err_has "$2" || return 1
  run info --json "$1"
  rc_is 2 "info --json of $(basename "$1")" || return 1
  run verify "$1" -i "$D/keys.txt"
  rc_is 2 "verify -i of $(basename "$1")" || return 1
  run verify "$1"
  rc_is 2 "verify of $(basename "$1")" || return 1
  err_has "$2"
}

case_corrupt_filter() {
  cp "$D/keys.rbn" "$D/corrupt.rbn"
  local size middle byte
  size=$(stat -c %s "$D/corrupt.rbn")
  middle=$((size / 2))
  byte=$(od -An -tu1 -j "$middle" -N1 "$D/corrupt.rbn" | tr -d ' ')
  # shellcheck disable=SC2059  # the format is the octal escape of the new byte
  printf "\\$(printf '%03o' $((byte ^ 0x5a)))" |
    dd of="$D/corrupt.rbn" bs=1 seek="$middle" conv=notrunc status=none
  cmp -s "$D/corrupt.rbn" "$D/keys.rbn" && fail "the byte was not changed" && return 1
  damaged_filter_fails "$D/corrupt.rbn" "checksum mismatch"
}

case_newer_version() {
  cp "$D/keys.rbn" "$D/v4.rbn"
  printf '\004' | dd of="$D/v4.rbn" bs=1 seek=8 conv=notrunc status=none
  damaged_filter_fails "$D/v4.rbn" "unsupported format version 4"
}

case_truncated_and_foreign() {
  head -c 1000 "$D/keys.rbn" >"$D/truncated.rbn"
  damaged_filter_fails "$D/truncated.rbn" "truncated" || return 1
  damaged_filter_fails "$D/keys.txt" "not a ribbon filter" || return 1
  run query "$D/no-such.rbn" key-1
  rc_is 2 "query of a missing filter" || return 1
  err_has "no-such.rbn" || return 1
  err_has "No such file or directory"
}

group_files() {
  make_line_keys
  printf 'a\n' >"$D/a.txt"
  setup_keys_filter files || return 0
  t files.unwritable_output case_unwritable_output
  t files.read_only_output_directory case_read_only_output_dir
  t files.full_disk_leaves_nothing case_full_disk
  t files.existing_output_replaced_atomically case_existing_output_kept
  t files.corrupt_filter case_corrupt_filter
  t files.newer_format_version case_newer_version
  t files.truncated_or_foreign_file case_truncated_and_foreign
}

# ------------------------------------------------------------------------------------------
# outofcore: a memory limit far below the keys' size spills to --tmp-dir; the file must be
# the same bytes, and the temporary directory empty afterwards, whatever happened.

case_out_of_core_identical() {
  mkdir -p "$D/tmp"
  build_ok -i "$D/keys.txt" -o "$D/keys.rbn" -r 16 || return 1
  build_ok -i "$D/keys.txt" -o "$D/keys-ooc.rbn" -r 16 --memory-limit 64K --tmp-dir "$D/tmp" ||
    return 1
  err_has "out of core" || return 1
  same_file "$D/keys-ooc.rbn" "$D/keys.rbn" || return 1
  dir_holds "$D/tmp" || return 1
  build_ok -i "$D/ints.u64" --format u64 -o "$D/ints.rbn" -w 32 -r 7 --seed 99 || return 1
  build_ok -i "$D/ints.u64" --format u64 -o "$D/ints-ooc.rbn" -w 32 -r 7 --seed 99 \
    --memory-limit 64K --tmp-dir "$D/tmp" || return 1
  same_file "$D/ints-ooc.rbn" "$D/ints.rbn" || return 1
  dir_holds "$D/tmp"
}

case_repeated_keys_give_the_set_file() {
  mkdir -p "$D/tmp"
  # The keys three times, shuffled together: the bytes of `sort -u keys | ribbon build`, in
  # memory and out of core; the summary counts input and distinct keys.
  cat "$D/keys.txt" "$D/keys.txt" "$D/keys.txt" |
    perl -MList::Util=shuffle -e 'srand(7); print shuffle(<STDIN>)' >"$D/keys3.txt"
  sort -u "$D/keys3.txt" | "$RIBBON" build -o "$D/set.rbn" 2>"$ERR"
  RC=$?
  rc_is 0 "build from sort -u" || return 1
  err_has "$N keys ($N distinct)" || return 1
  cat "$D/keys3.txt" | "$RIBBON" build -o "$D/multiset.rbn" 2>"$ERR"
  RC=$?
  rc_is 0 "build from the keys three times" || return 1
  err_has "$((3 * N)) keys ($N distinct)" || return 1
  same_file "$D/multiset.rbn" "$D/set.rbn" || return 1
  build_ok -i "$D/keys3.txt" -o "$D/multiset-ooc.rbn" --memory-limit 64K --tmp-dir "$D/tmp" ||
    return 1
  err_has "out of core" || return 1
  same_file "$D/multiset-ooc.rbn" "$D/set.rbn" || return 1
  dir_holds "$D/tmp" || return 1
  run info "$D/multiset.rbn"
  out_has "distinct keys   $N" || return 1
  # Integer keys: a file given twice.
  build_ok -i "$D/ints.u64" --format u64 -o "$D/ints-set.rbn" || return 1
  build_ok -i "$D/ints.u64" -i "$D/ints.u64" --format u64 -o "$D/ints-twice.rbn" \
    --memory-limit 64K --tmp-dir "$D/tmp" || return 1
  same_file "$D/ints-twice.rbn" "$D/ints-set.rbn" || return 1
  dir_holds "$D/tmp"
}

case_out_of_core_failures_clean_up() {
  mkdir -p "$D/tmp" "$D/ooc-out"
  # Bad input at the end, after the spill started.
  { cat "$D/ints.hex"; echo "not-hex"; } >"$D/late-error.hex"
  run build -i "$D/late-error.hex" --format hex64 -o "$D/ooc-out/out.rbn" --memory-limit 64K \
    --tmp-dir "$D/tmp"
  rc_is 2 "out-of-core build of bad input" || return 1
  err_has "late-error.hex:$((N + 1)):" || return 1
  dir_holds "$D/tmp" || return 1
  dir_holds "$D/ooc-out" || return 1
  # Spill files past the file size limit.
  (
    trap '' XFSZ
    ulimit -f 1
    "$RIBBON" build -i "$D/keys.txt" -o "$D/ooc-out/out.rbn" --memory-limit 64K \
      --tmp-dir "$D/tmp" </dev/null >"$OUT" 2>"$ERR"
  )
  RC=$?
  rc_is 2 "out-of-core build past the file size limit" || return 1
  err_has "File too large" || return 1
  dir_holds "$D/tmp" || return 1
  dir_holds "$D/ooc-out" || return 1
  # An unusable --tmp-dir.
  run build -i "$D/keys.txt" -o "$D/ooc-out/out.rbn" --memory-limit 64K --tmp-dir "$D/nowhere"
  rc_is 2 "build with a missing --tmp-dir" || return 1
  err_has "nowhere" || return 1
  dir_holds "$D/ooc-out"
}

case_signal_removes_temp_files() {
  mkdir -p "$D/tmp" "$D/sig-out"
  rm -f "$D/fifo"
  mkfifo "$D/fifo"
  # Read-write: never blocks, and keeps a writer so that the build never sees the end.
  exec 3<>"$D/fifo"
  "$RIBBON" build -i "$D/fifo" -o "$D/sig-out/out.rbn" --memory-limit 64K --tmp-dir "$D/tmp" \
    </dev/null >"$OUT" 2>"$ERR" &
  local pid=$! waited=0 status
  timeout 10 cat "$D/keys.txt" >&3
  # Wait (up to 10 s) until keys were spilled.
  while [[ -z "$(find "$D/tmp" -type f 2>/dev/null)" && $waited -lt 100 ]]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  local spilled
  spilled=$(find "$D/tmp" -type f | wc -l)
  kill -TERM "$pid"
  wait "$pid"
  status=$?
  exec 3>&-
  rm -f "$D/fifo"
  [[ $spilled -gt 0 ]] || fail "no spill files appeared under --tmp-dir with --memory-limit 64K" ||
    return 1
  [[ $status -eq 143 ]] || fail "exit status $status after SIGTERM, expected 143" || return 1
  dir_holds "$D/tmp" || return 1
  dir_holds "$D/sig-out"
}

group_outofcore() {
  # Enough keys to exceed a 64K memory limit several times, whatever the scale.
  [[ $N -lt 20000 ]] && N=20000
  echo "(out-of-core cases use $N keys)"
  make_line_keys
  make_integer_keys
  t outofcore.identical_to_in_memory case_out_of_core_identical
  t outofcore.repeated_keys_give_the_set_file case_repeated_keys_give_the_set_file
  t outofcore.failures_leave_no_temp_files case_out_of_core_failures_clean_up
  t outofcore.sigterm_removes_temp_files case_signal_removes_temp_files
}

# ------------------------------------------------------------------------------------------
# variants: standard and homogeneous filters, retrieval (--values, --value-file), fractional
# bits per key.

# summary_bits_per_key: the bits/key of the build summary in $ERR.
summary_bits_per_key() {
  sed -n 's/.* \([0-9.]*\) bits\/key.*/\1/p' "$ERR" | tail -n 1
}

case_standard_round_trip() {
  build_ok -i "$D/keys.txt" -o "$D/standard.rbn" --variant standard || return 1
  err_has ", standard, " || return 1
  grep -qE ', [0-9]+ tr(y|ies),' "$ERR" || fail "no tries in the summary: $(stderr_text)" ||
    return 1
  run verify "$D/standard.rbn" -i "$D/keys.txt"
  rc_is 0 "verify -i keys of a standard filter" || return 1
  out_has "all $N keys positive" || return 1
  run query "$D/standard.rbn" -i "$D/keys.txt" --count
  out_is "$N queried, $N positive" || return 1
  build_ok -i "$D/keys.txt" -o "$D/standard-p.rbn" --variant standard --success-probability 0.5 \
    --fpr 0.01 || return 1
  run verify "$D/standard-p.rbn" -i "$D/keys.txt"
  rc_is 0 "verify of a standard filter with --fpr" || return 1
  run info --json "$D/standard.rbn"
  out_has '"variant": "standard"'
}

case_homogeneous_round_trip() {
  build_ok -i "$D/keys.txt" -o "$D/homogeneous.rbn" --variant homogeneous || return 1
  err_has ", homogeneous, " || return 1
  run verify "$D/homogeneous.rbn" -i "$D/keys.txt"
  rc_is 0 "verify -i keys of a homogeneous filter" || return 1
  out_has "all $N keys positive" || return 1
  # Overloaded (eps < 0): still no false negatives.
  build_ok -i "$D/keys.txt" -o "$D/homogeneous-over.rbn" --variant homogeneous --slack -0.1 ||
    return 1
  run verify "$D/homogeneous-over.rbn" -i "$D/keys.txt"
  rc_is 0 "verify of an overloaded homogeneous filter"
}

case_variant_options() {
  mkdir -p "$D/out"
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --slack 0.1
  rc_is 2 "build --slack of a bumped filter" || return 1
  err_has "--slack" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --variant standard --slack 5
  rc_is 2 "build --variant standard --slack 5" || return 1
  err_has "slack" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --variant homogeneous --success-probability 0.9
  rc_is 2 "build --variant homogeneous --success-probability" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --variant fancy
  rc_is 2 "build --variant fancy" || return 1
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --variant retrieval
  rc_is 2 "build --variant retrieval without values" || return 1
  err_has "--values" || return 1
  dir_holds "$D/out"
}

case_fpr_fractional_bits() {
  # --fpr 0.01: r = 6 with about 72% of blocks at 7 bits, about 6.72 bits/key (not 7). Enough
  # keys that the file's fixed costs do not count.
  seq -f 'many-%.0f' 1 1000000 >"$D/many.txt"
  build_ok -i "$D/many.txt" -o "$D/fpr.rbn" --fpr 0.01 || return 1
  err_has "expected FPR 0.01" || return 1
  local bits
  bits=$(summary_bits_per_key)
  [[ -n "$bits" ]] || fail "no bits/key in the summary: $(stderr_text)" || return 1
  awk -v b="$bits" 'BEGIN { exit !(b < 6.8 && b > 6.6) }' ||
    fail "--fpr 0.01 costs $bits bits/key, expected 6.6 to 6.8" || return 1
  run query "$D/fpr.rbn" -i "$D/many.txt" --count
  out_is "1000000 queried, 1000000 positive" || return 1
  rm -f "$D/many.txt" "$D/fpr.rbn"
}

# Key<TAB>value lines: a tab inside a key (split at the last tab), a CRLF line, hex values.
make_value_lines() {
  awk '{ printf "%s\t%d\n", $0, (NR * 2654435761) % 1000003 }' "$D/keys.txt" >"$D/kv.tsv"
  printf 'with\ttab\t7\ncrlf-key\t8\r\n' >>"$D/kv.tsv"
  # The keys alone (everything before the last tab), and the expected output.
  sed 's/\t[^\t]*$//' "$D/kv.tsv" >"$D/kv-keys.txt"
  tr -d '\r' <"$D/kv.tsv" >"$D/kv-expected.tsv"
}

case_values_round_trip() {
  make_value_lines
  build_ok -i "$D/kv.tsv" --values -o "$D/kv.rbn" || return 1
  err_has "retrieval, 20-bit values" || return 1
  err_has "over r=20" || return 1
  run query "$D/kv.rbn" --values -i "$D/kv-keys.txt"
  rc_is 0 "query --values" || return 1
  diff <(sort "$OUT") <(sort "$D/kv-expected.tsv") >/dev/null ||
    fail "query --values does not print the input's pairs" || return 1
  same_file "$OUT" "$D/kv-expected.tsv" || return 1
  run query "$D/kv.rbn" --values "$(printf 'with\ttab')" crlf-key
  rc_is 0 "query --values with arguments" || return 1
  out_is "$(printf 'with\ttab\t7\ncrlf-key\t8')" || return 1
  run verify "$D/kv.rbn" -i "$D/kv.tsv" --values
  rc_is 0 "verify --values" || return 1
  out_has "all $((N + 2)) keys" || return 1
  # A wrong value is reported like a missing key.
  sed '3s/\t[0-9]*$/\t1000004/' "$D/kv.tsv" >"$D/kv-wrong.tsv"
  run verify "$D/kv.rbn" -i "$D/kv-wrong.tsv" --values
  rc_is 1 "verify --values with a wrong value" || return 1
  out_has "FAILED" || return 1
  out_has "'key-3' ($D/kv-wrong.tsv:3: value 1000004, stored " || return 1
  # The standard retrieval variant, and --bits above what the values need.
  build_ok -i "$D/kv.tsv" --values --variant standard -r 24 -o "$D/kv-standard.rbn" || return 1
  err_has "standard retrieval, 24-bit values" || return 1
  run query "$D/kv-standard.rbn" --values -i "$D/kv-keys.txt"
  same_file "$OUT" "$D/kv-expected.tsv" || return 1
  # Hex values and chunks smaller than a line.
  printf 'a\t0x10\nb\t0XfF\nc\t4294967295\n' >"$D/hex-values.tsv"
  RIBBON_CLI_CHUNK_BYTES=16 build_ok -i "$D/hex-values.tsv" --values -o "$D/hex-values.rbn" ||
    return 1
  err_has "32-bit values" || return 1
  run query "$D/hex-values.rbn" --values a b c
  out_is "$(printf 'a\t16\nb\t255\nc\t4294967295')"
}

case_values_wrong_use() {
  mkdir -p "$D/out"
  run query "$D/kv.rbn" key-1
  rc_is 2 "query of a retrieval file without --values" || return 1
  err_has "--values" || return 1
  run verify "$D/kv.rbn" -i "$D/kv-keys.txt"
  rc_is 2 "verify of a retrieval file with plain keys" || return 1
  err_has "--values" || return 1
  build_ok -i "$D/keys.txt" -o "$D/plain.rbn" || return 1
  run query "$D/plain.rbn" --values key-1
  rc_is 2 "query --values of a filter" || return 1
  err_has "filter" || return 1
  run verify "$D/plain.rbn" --values -i "$D/kv.tsv"
  rc_is 2 "verify --values of a filter" || return 1
  run build -i "$D/kv.tsv" --values --format u64 -o "$D/out/x.rbn"
  rc_is 2 "build --values --format u64" || return 1
  err_has "--value-file" || return 1
  run build -i "$D/kv.tsv" --values --variant homogeneous -o "$D/out/x.rbn"
  rc_is 2 "build --values --variant homogeneous" || return 1
  run build -i "$D/kv.tsv" --values --fpr 0.01 -o "$D/out/x.rbn"
  rc_is 2 "build --values --fpr" || return 1
  # Lines without a tab or with a bad value name the file and line.
  printf 'a\t1\nb\t2\nc\n' >"$D/no-tab.tsv"
  run build -i "$D/no-tab.tsv" --values -o "$D/out/x.rbn"
  rc_is 2 "build --values of a line without a tab" || return 1
  err_has "no-tab.tsv:3:" || return 1
  printf 'a\t1\nb\t4294967296\n' >"$D/too-big.tsv"
  run build -i "$D/too-big.tsv" --values -o "$D/out/x.rbn"
  rc_is 2 "build --values of a value above 2^32" || return 1
  err_has "too-big.tsv:2:" || return 1
  err_has "32 bits" || return 1
  printf 'a\t12x\n' >"$D/not-a-number.tsv"
  run build -i "$D/not-a-number.tsv" --values -o "$D/out/x.rbn"
  rc_is 2 "build --values of a bad value" || return 1
  err_has "not-a-number.tsv:1:" || return 1
  err_has "12x" || return 1
  dir_holds "$D/out"
}

case_value_file_u64() {
  mkdir -p "$D/out"
  # Keys and values as little-endian 8-byte integers; the expected key<TAB>value output.
  perl -e '
    my ($n, $dir) = @ARGV;
    open(my $k, ">", "$dir/vk.u64") or die;
    open(my $v, ">", "$dir/vv.u64") or die;
    open(my $e, ">", "$dir/vkv.tsv") or die;
    binmode $k;
    binmode $v;
    for my $i (0 .. $n - 1) {
      my $key = ((($i * 2654435761) % 4294967296) << 32) | $i;
      my $value = ($i * 40503) % 65536;
      print $k pack("Q<", $key);
      print $v pack("Q<", $value);
      print $e "$key\t$value\n";
    }' "$N" "$D"
  build_ok -i "$D/vk.u64" --format u64 --value-file "$D/vv.u64" -o "$D/vk.rbn" || return 1
  err_has "retrieval, 16-bit values" || return 1
  run query "$D/vk.rbn" --format u64 --values -i "$D/vk.u64"
  rc_is 0 "query --format u64 --values" || return 1
  same_file "$OUT" "$D/vkv.tsv" || return 1
  # Line keys with a value file.
  head -c $((8 * N)) "$D/vv.u64" >"$D/vv-lines.u64"
  build_ok -i "$D/keys.txt" --value-file "$D/vv-lines.u64" -o "$D/vk-lines.rbn" || return 1
  # Bad value files: a size not a multiple of 8, one value short, a value of 2^32.
  head -c 83 "$D/vv.u64" >"$D/odd-values.u64"
  run build -i "$D/vk.u64" --format u64 --value-file "$D/odd-values.u64" -o "$D/out/x.rbn"
  rc_is 2 "build with a value file of 83 bytes" || return 1
  err_has "not a multiple of 8" || return 1
  head -c $((8 * N - 8)) "$D/vv.u64" >"$D/short-values.u64"
  run build -i "$D/vk.u64" --format u64 --value-file "$D/short-values.u64" -o "$D/out/x.rbn"
  rc_is 2 "build with one value short" || return 1
  err_has "short-values.u64" || return 1
  perl -e 'binmode STDOUT; print pack("Q<", 1), pack("Q<", 4294967296)' >"$D/big-values.u64"
  perl -e 'binmode STDOUT; print pack("Q<", 10), pack("Q<", 20)' >"$D/two-keys.u64"
  run build -i "$D/two-keys.u64" --format u64 --value-file "$D/big-values.u64" -o "$D/out/x.rbn"
  rc_is 2 "build with a value of 2^32" || return 1
  err_has "32 bits" || return 1
  run build -i "$D/vk.u64" --format u64 --value-file "$D/no-such-values.u64" -o "$D/out/x.rbn"
  rc_is 2 "build with a missing value file" || return 1
  err_has "no-such-values.u64" || return 1
  dir_holds "$D/out"
}

case_duplicate_keys() {
  mkdir -p "$D/out"
  printf 'alpha\t1\nbeta\t2\nalpha\t1\n' >"$D/dup-same.tsv"
  build_ok -i "$D/dup-same.tsv" --values -o "$D/dup-same.rbn" || return 1
  run query "$D/dup-same.rbn" --values alpha beta
  out_is "$(printf 'alpha\t1\nbeta\t2')" || return 1
  printf 'alpha\t1\nduplicated-key\t2\nbeta\t3\nduplicated-key\t2\nduplicated-key\t4\n' \
    >"$D/dup-diff.tsv"
  run build -i "$D/dup-diff.tsv" --values -o "$D/out/dup.rbn"
  rc_is 2 "build --values with two values for a key" || return 1
  err_has "duplicate key with different values" || return 1
  err_has "duplicated-key" || return 1
  err_has "'duplicated-key' ($D/dup-diff.tsv:2 and $D/dup-diff.tsv:5)" || return 1
  # From a pipe the key cannot be read again: the lines name it.
  cat "$D/dup-diff.tsv" | "$RIBBON" build --values -o "$D/out/dup.rbn" 2>"$ERR"
  RC=$?
  rc_is 2 "build --values from a pipe with two values for a key" || return 1
  err_has "<stdin>:2 and <stdin>:5" || return 1
  # Integer keys: the library names the key.
  printf '1f\t1\n2f\t2\n1F\t3\n' >"$D/dup-hex.tsv"
  run build -i "$D/dup-hex.tsv" --values --format hex64 -o "$D/out/dup.rbn"
  rc_is 2 "build --values --format hex64 with two values for a key" || return 1
  err_has "key 31" || return 1
  dir_holds "$D/out"
}

case_value_too_wide() {
  mkdir -p "$D/out"
  printf 'a\t255\nb\t256\n' >"$D/wide.tsv"
  run build -i "$D/wide.tsv" --values --bits 8 -o "$D/out/wide.rbn"
  rc_is 2 "build --values --bits 8 of the value 256" || return 1
  err_has "wide.tsv:2:" || return 1
  err_has "--bits 8" || return 1
  perl -e 'binmode STDOUT; print pack("Q<", 1), pack("Q<", 256)' >"$D/wide-values.u64"
  perl -e 'binmode STDOUT; print pack("Q<", 10), pack("Q<", 20)' >"$D/two-keys.u64"
  run build -i "$D/two-keys.u64" --format u64 --value-file "$D/wide-values.u64" --bits 8 \
    -o "$D/out/wide.rbn"
  rc_is 2 "build --value-file --bits 8 of the value 256" || return 1
  err_has "wide-values.u64" || return 1
  err_has "--bits 8" || return 1
  dir_holds "$D/out"
}

group_variants() {
  make_line_keys
  t variants.standard_round_trip case_standard_round_trip
  t variants.homogeneous_round_trip case_homogeneous_round_trip
  t variants.options case_variant_options
  t variants.fpr_gives_fractional_bits case_fpr_fractional_bits
  t values.tsv_round_trip case_values_round_trip
  t values.wrong_use case_values_wrong_use
  t values.value_file_u64 case_value_file_u64
  t values.duplicate_keys case_duplicate_keys
  t values.value_too_wide_for_bits case_value_too_wide
}

# ------------------------------------------------------------------------------------------
# reliability: what -o may replace, long paths, number ranges, filters that are not regular
# files, temporaries of killed builds (issue #14).

# kind_is TEST PATH WHAT: PATH is still what `test TEST` says (e.g. -p: a FIFO).
kind_is() {
  test "$1" "$2" || fail "$2 is no longer $3: $(ls -ld "$2")"
}

case_output_kinds_refused() {
  mkdir -p "$D/kinds"
  mkfifo "$D/kinds/fifo"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
    "$D/kinds/socket" || fail "cannot create a socket" || return 1
  local refused=(fifo:-p:"a FIFO" socket:-S:"a socket")
  # A character device like /dev/null (as root only; mknod needs CAP_MKNOD).
  mknod "$D/kinds/null" c 1 3 2>/dev/null && refused+=(null:-c:"a character device")
  mkdir "$D/kinds/dir"
  refused+=(dir:-d:"a directory")
  local entry name test what
  for entry in "${refused[@]}"; do
    IFS=: read -r name test what <<<"$entry"
    run build -i "$D/keys.txt" -o "$D/kinds/$name" -q
    rc_is 2 "build -o $what" || return 1
    err_has "cannot write $D/kinds/$name: it is $what" || return 1
    kind_is "$test" "$D/kinds/$name" "$what" || return 1
    # The same through a symbolic link: the link is followed.
    ln -sf "$name" "$D/kinds/link"
    run build -i "$D/keys.txt" -o "$D/kinds/link" -q
    rc_is 2 "build -o a link to $what" || return 1
    err_has "it is $what" || return 1
    kind_is "$test" "$D/kinds/$name" "$what" || return 1
    kind_is -L "$D/kinds/link" "a symbolic link" || return 1
    rm "$D/kinds/link"
  done
  # Refused before any input is read: a FIFO input with no writer would block.
  mkfifo "$D/kinds/blocked-input"
  timeout 10 "$RIBBON" build -i "$D/kinds/blocked-input" -o "$D/kinds/fifo" </dev/null \
    >"$OUT" 2>"$ERR"
  RC=$?
  rc_is 2 "build from a blocked FIFO to a FIFO" || return 1
  rm "$D/kinds/blocked-input"
  dir_holds "$D/kinds" "${refused[@]%%:*}"
}

case_symlinked_output() {
  mkdir -p "$D/links/real" "$D/links/elsewhere"
  build_ok -i "$D/a.txt" -o "$D/links/real/target.rbn" -q || return 1
  ln -s real/target.rbn "$D/links/link.rbn"
  ln -s ../link.rbn "$D/links/elsewhere/chain.rbn"
  # A chain of relative links: the final target is replaced, in its own directory.
  build_ok -i "$D/keys.txt" -o "$D/links/elsewhere/chain.rbn" || return 1
  err_has "chain.rbn: $N keys" || return 1
  kind_is -L "$D/links/link.rbn" "a symbolic link" || return 1
  kind_is -L "$D/links/elsewhere/chain.rbn" "a symbolic link" || return 1
  run info --json "$D/links/real/target.rbn"
  out_has "\"key_count\": $N," || return 1
  dir_holds "$D/links/real" target.rbn || return 1
  dir_holds "$D/links/elsewhere" chain.rbn || return 1
  # A dangling link: its target is created.
  ln -s real/new.rbn "$D/links/dangling.rbn"
  build_ok -i "$D/a.txt" -o "$D/links/dangling.rbn" -q || return 1
  kind_is -L "$D/links/dangling.rbn" "a symbolic link" || return 1
  kind_is -f "$D/links/real/new.rbn" "a regular file" || return 1
  # A loop of links is an error.
  ln -s loop2 "$D/links/loop1"
  ln -s loop1 "$D/links/loop2"
  run build -i "$D/a.txt" -o "$D/links/loop1" -q
  rc_is 2 "build -o a loop of links" || return 1
  err_has "too many levels of symbolic links"
}

# long_dir BASE LENGTH: creates and prints a directory path of LENGTH bytes: BASE/ followed
# by directory names of at most 200 bytes.
long_dir() {
  local dir=$1 part
  part=$(printf 'd%.0s' {1..200})
  while [[ ${#dir} -lt $(($2 - 201)) ]]; do dir=$dir/$part; done
  dir=$dir/${part:0:$(($2 - ${#dir} - 1))}
  mkdir -p "$dir" && echo "$dir"
}

case_long_paths() {
  local deep out
  deep=$(long_dir "$D/long" 4000) || fail "cannot create a deep directory" || return 1
  # Up to PATH_MAX - 1 = 4095 bytes in all.
  out=$deep/$(printf 'f%.0s' $(seq $((4095 - ${#deep} - 1))))
  [[ ${#out} -eq 4095 ]] || fail "test path is ${#out} bytes" || return 1
  run build -i "$D/keys.txt" -o "$out" -q
  rc_is 0 "build -o a 4095-byte path" || return 1
  run info --json "$out"
  out_has "\"key_count\": $N," || return 1
  dir_holds "$deep" "$(basename "$out")" || return 1
  rm "$out"
  run build -i "$D/keys.txt" -o "${out}x" -q
  rc_is 2 "build -o a 4096-byte path" || return 1
  err_has "path too long (4096 bytes, at most 4095)" || return 1
  dir_holds "$deep" || return 1
  # Out of core through a long --tmp-dir: works while spill file paths fit, else refused
  # before the build starts; nothing is left either way.
  local tmp
  tmp=$(long_dir "$D/longtmp" 3900) || fail "cannot create a deep directory" || return 1
  run build -i "$D/keys.txt" -o "$deep/ooc.rbn" --memory-limit 64K --tmp-dir "$tmp" -q
  rc_is 0 "build with a 3900-byte --tmp-dir" || return 1
  dir_holds "$tmp" || return 1
  tmp=$(long_dir "$D/longtmp" 4090) || fail "cannot create a deep directory" || return 1
  run build -i "$D/keys.txt" -o "$deep/ooc2.rbn" --memory-limit 64K --tmp-dir "$tmp" -q
  rc_is 2 "build with a 4090-byte --tmp-dir" || return 1
  err_has "temporary directory path too long" || return 1
  dir_holds "$tmp" || return 1
  dir_holds "$deep" ooc.rbn
}

case_number_ranges() {
  local value
  for value in -1 18446744073709551616 99999999999999999999999 1.5 0x 12a; do
    run build -i "$D/a.txt" -o "$D/out/n.rbn" --seed "$value"
    rc_is 2 "build --seed $value" || return 1
    err_has "--seed" || return 1
    err_has "0 to 2^64 - 1" || return 1
  done
  for value in 65536 -1 4294967297 100000; do
    run build -i "$D/a.txt" -o "$D/out/n.rbn" --threads "$value"
    rc_is 2 "build --threads $value" || return 1
    err_has "--threads" || return 1
    err_has "(all cores) to" || return 1
  done
  for value in -1 3 1000 4294967296 18446744073709551616; do
    run build -i "$D/a.txt" -o "$D/out/n.rbn" --shard-size "$value"
    rc_is 2 "build --shard-size $value" || return 1
    err_has "--shard-size" || return 1
    err_has "power of two up to 2^31" || return 1
  done
  for value in -1 18446744073709551616 20000000000000000000; do
    run build -i "$D/a.txt" -o "$D/out/n.rbn" --memory-limit "$value"
    rc_is 2 "build --memory-limit $value" || return 1
    err_has "--memory-limit" || return 1
  done
  for value in "--seed -1" "--threads 65536" "--shard-size 3" "--negatives -1"; do
    # shellcheck disable=SC2086  # an option and its value
    run bench -n 10 $value
    rc_is 2 "bench $value" || return 1
    err_has "${value%% *}" || return 1
  done
  dir_holds "$D/out" || return 1
  # The extremes are accepted, hex is read as hex, and leading zeros do not mean octal.
  build_ok -i "$D/a.txt" -o "$D/out/max.rbn" --seed 18446744073709551615 -q || return 1
  run info --json "$D/out/max.rbn"
  out_has '"seed": 18446744073709551615' || return 1
  build_ok -i "$D/a.txt" -o "$D/out/hex.rbn" --seed 0x10 --threads 01 -q || return 1
  build_ok -i "$D/a.txt" -o "$D/out/dec.rbn" --seed 16 --threads 1 -q || return 1
  same_file "$D/out/hex.rbn" "$D/out/dec.rbn" || return 1
  build_ok -i "$D/a.txt" -o "$D/out/oct.rbn" --seed 010 -q || return 1
  run info --json "$D/out/oct.rbn"
  out_has '"seed": 10,' || return 1
  rm -f "$D/out/max.rbn" "$D/out/hex.rbn" "$D/out/dec.rbn" "$D/out/oct.rbn"
}

case_filter_not_regular() {
  mkfifo "$D/filter.fifo"
  local command
  for command in "info" "info --json" "verify" "query --count"; do
    # shellcheck disable=SC2086  # a command and its options
    timeout 10 "$RIBBON" $command "$D/filter.fifo" </dev/null >"$OUT" 2>"$ERR"
    RC=$?
    [[ $RC -ne 124 ]] || fail "ribbon $command on a FIFO blocked" || return 1
    rc_is 2 "$command of a FIFO" || return 1
    err_has "cannot read $D/filter.fifo: it is a FIFO" || return 1
  done
  kind_is -p "$D/filter.fifo" "a FIFO" || return 1
  rm "$D/filter.fifo"
  run info /dev/null
  rc_is 2 "info /dev/null" || return 1
  err_has "it is a character device" || return 1
  run verify "$D"
  rc_is 2 "verify of a directory" || return 1
  err_has "it is a directory" || return 1
  # Keys from stdin still work.
  run_in "$D/keys.txt" query --count "$D/keys.rbn"
  rc_is 0 "query with keys from stdin" || return 1
  out_is "$N queried, $N positive"
}

case_output_is_input() {
  cp "$D/keys.txt" "$D/k.txt"
  cp "$D/keys.txt" "$D/k.saved"
  ln -sf k.txt "$D/k.link"
  ln -f "$D/k.txt" "$D/k.hardlink"
  local output
  for output in k.txt k.link k.hardlink; do
    run build -i "$D/a.txt" -i "$D/k.txt" -o "$D/$output"
    rc_is 2 "build -o $output (an input)" || return 1
    err_has "-o $D/$output is the input $D/k.txt" || return 1
    same_file "$D/k.txt" "$D/k.saved" || return 1
  done
  run_in "$D/k.txt" build -o "$D/k.txt"
  rc_is 2 "build -o the file on stdin" || return 1
  err_has "is the input <stdin>" || return 1
  run build -i "$D/a.txt" --value-file "$D/k.txt" -o "$D/k.txt"
  rc_is 2 "build -o the --value-file" || return 1
  err_has "is the input $D/k.txt" || return 1
  same_file "$D/k.txt" "$D/k.saved" || return 1
  rm "$D/k.link" "$D/k.hardlink" "$D/k.saved"
}

# start_blocked_build TMP OUTDIR: a build that spills to TMP and waits for more input (a
# FIFO held open on descriptor 3), its stderr in $D/bg.err; sets BUILD_PID. Returns 1 if
# nothing was spilled.
start_blocked_build() {
  rm -f "$D/fifo"
  mkfifo "$D/fifo"
  exec 3<>"$D/fifo"
  "$RIBBON" build -i "$D/fifo" -o "$2/out.rbn" --memory-limit 64K --tmp-dir "$1" -q \
    </dev/null >"$D/bg.out" 2>"$D/bg.err" 3>&- &
  BUILD_PID=$!
  timeout 10 cat "$D/keys.txt" >&3
  local waited=0
  while [[ -z "$(find "$1" -type f 2>/dev/null)" && $waited -lt 100 ]]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  [[ -n "$(find "$1" -type f)" ]] || fail "no spill files under $1"
}

case_stale_temporaries() {
  mkdir -p "$D/stale-tmp" "$D/stale-out"
  # A build killed with SIGKILL leaves its spill directory.
  start_blocked_build "$D/stale-tmp" "$D/stale-out" || return 1
  kill -KILL "$BUILD_PID"
  wait "$BUILD_PID" 2>/dev/null
  exec 3>&-
  local left
  left=$(find "$D/stale-tmp" -mindepth 1 -maxdepth 1 -name 'ribbon-spill-*' | wc -l)
  [[ $left -eq 1 ]] || fail "expected 1 spill directory after SIGKILL, found $left" || return 1
  # What a build killed while writing OUT leaves: a temporary file with the magic, unlocked.
  cp "$D/keys.rbn" "$D/stale-out/.ribbon-tmp-dead01"
  # A live build's temporaries (locked), and files that only look like ours.
  cp "$D/keys.rbn" "$D/stale-out/.ribbon-tmp-live01"
  echo "not a filter" >"$D/stale-out/.ribbon-tmp-notour"
  cp "$D/keys.rbn" "$D/stale-out/.ribbon-tmp-toolong"
  cp "$D/keys.rbn" "$D/stale-out/keys.ribbon-tmp-abcdef"
  # Spill directories: an old empty one (reclaimed), a new empty one (its build may not have
  # locked it yet) and one holding a file that is not a spill file (kept).
  mkdir "$D/stale-tmp/ribbon-spill-empty1" "$D/stale-tmp/ribbon-spill-young1" \
    "$D/stale-tmp/ribbon-spill-keep01"
  echo "notes" >"$D/stale-tmp/ribbon-spill-keep01/notes.txt"
  touch -d '2 hours ago' "$D/stale-tmp/ribbon-spill-empty1" "$D/stale-tmp/ribbon-spill-keep01"
  flock "$D/stale-out/.ribbon-tmp-live01" sleep 60 &
  local holder=$!
  sleep 0.5
  # The next build reclaims what dead builds left, in the output directory and under the
  # tmp dir, and nothing else.
  build_ok -i "$D/a.txt" -o "$D/stale-out/next.rbn" --tmp-dir "$D/stale-tmp" || return 1
  kill "$holder"
  wait "$holder" 2>/dev/null
  dir_holds "$D/stale-tmp" ribbon-spill-young1 ribbon-spill-keep01 || return 1
  dir_holds "$D/stale-out" next.rbn .ribbon-tmp-live01 .ribbon-tmp-notour .ribbon-tmp-toolong \
    keys.ribbon-tmp-abcdef
}

case_live_build_untouched() {
  mkdir -p "$D/live-tmp" "$D/live-out"
  start_blocked_build "$D/live-tmp" "$D/live-out" || return 1
  local pid=$BUILD_PID status
  # Another build with the same directories, while the first one lives.
  build_ok -i "$D/a.txt" -o "$D/live-out/other.rbn" --tmp-dir "$D/live-tmp" --memory-limit 64K ||
    return 1
  exec 3>&-  # end of the first build's input
  wait "$pid"
  status=$?
  rm -f "$D/fifo"
  [[ $status -eq 0 ]] || fail "the first build failed ($status): $(cat "$D/bg.err")" || return 1
  run verify "$D/live-out/out.rbn" -i "$D/keys.txt"
  rc_is 0 "verify the first build's file" || return 1
  dir_holds "$D/live-tmp" || return 1
  dir_holds "$D/live-out" out.rbn other.rbn
}

case_sigint_removes_temp_files() {
  mkdir -p "$D/int-tmp" "$D/int-out"
  start_blocked_build "$D/int-tmp" "$D/int-out" || return 1
  kill -INT "$BUILD_PID"
  wait "$BUILD_PID" 2>/dev/null
  local status=$?
  exec 3>&-
  rm -f "$D/fifo"
  [[ $status -eq 130 ]] || fail "exit status $status after SIGINT, expected 130" || return 1
  dir_holds "$D/int-tmp" || return 1
  dir_holds "$D/int-out"
}

group_reliability() {
  [[ $N -lt 20000 ]] && N=20000  # out-of-core cases: enough keys to spill at 64K
  make_line_keys
  printf 'a\n' >"$D/a.txt"
  mkdir -p "$D/out"
  setup_keys_filter reliability || return 0
  t reliability.output_kinds_refused case_output_kinds_refused
  t reliability.symlinked_output case_symlinked_output
  t reliability.long_paths case_long_paths
  t reliability.number_ranges case_number_ranges
  t reliability.filter_not_regular case_filter_not_regular
  t reliability.output_is_input case_output_is_input
  t reliability.stale_temporaries_reclaimed case_stale_temporaries
  t reliability.live_build_untouched case_live_build_untouched
  t reliability.sigint_removes_temp_files case_sigint_removes_temp_files
}

# ------------------------------------------------------------------------------------------
# memory: --memory-limit bounds the peak resident memory of the process, less the documented
# constant (bulk_memory_reserve, 16 MiB), measured by GNU time (getrusage's ru_maxrss).
# 2*10^7 random u64 keys at scale 1. RIBBON_TEST_NO_RSS (sanitizer builds) skips it.

readonly RESERVE_KIB=$((16 * 1024))

# build_within LIMIT_MIB ARGS...: builds with --memory-limit LIMIT_MIB M, fails if the peak
# RSS passes the limit plus the reserve.
build_within() {
  local limit_mib=$1 peak_kib
  shift
  /usr/bin/time -f %M -o "$D/rss" "$RIBBON" build --memory-limit "${limit_mib}M" "$@" \
    </dev/null >"$OUT" 2>"$ERR"
  RC=$?
  rc_is 0 "build --memory-limit ${limit_mib}M $*" || return 1
  peak_kib=$(tail -n 1 "$D/rss")
  echo "  --memory-limit ${limit_mib}M $*: peak RSS $((peak_kib / 1024)) MiB"
  [[ $peak_kib -le $((limit_mib * 1024 + RESERVE_KIB)) ]] ||
    fail "peak RSS ${peak_kib} KiB passes ${limit_mib} MiB + 16 MiB (build $*)"
}

case_memory_limit_bounds_peak_rss() {
  [[ -z "${RIBBON_TEST_NO_RSS:-}" ]] || skip "sanitizer build: RSS is not the program's" || return
  [[ -x /usr/bin/time ]] || skip "no /usr/bin/time (Debian package 'time')" || return
  local keys
  keys=$(awk -v s="${RIBBON_TEST_SCALE:-1}" 'BEGIN { print int(20000000 * s) }')
  mkdir -p "$D/tmp"
  head -c $((8 * keys)) /dev/urandom >"$D/many.u64"
  build_ok -i "$D/many.u64" --format u64 -o "$D/many.rbn" -q || return 1
  build_within 32 -i "$D/many.u64" --format u64 -o "$D/many-32.rbn" --tmp-dir "$D/tmp" || return 1
  err_has "out of core" || return 1
  same_file "$D/many-32.rbn" "$D/many.rbn" || return 1
  build_within 64 -i "$D/many.u64" --format u64 -o "$D/many-64.rbn" --tmp-dir "$D/tmp" || return 1
  same_file "$D/many-64.rbn" "$D/many.rbn" || return 1
  # More threads than cores: fewer solve when their workspaces would not fit.
  build_within 32 -i "$D/many.u64" --format u64 -o "$D/many-t8.rbn" --tmp-dir "$D/tmp" -t 8 ||
    return 1
  same_file "$D/many-t8.rbn" "$D/many.rbn" || return 1
  dir_holds "$D/tmp"
}

case_memory_limit_below_the_floor() {
  mkdir -p "$D/tmp"
  build_ok -i "$D/keys.txt" -o "$D/floor.rbn" --memory-limit 64K --tmp-dir "$D/tmp" || return 1
  err_has "note: --memory-limit is below" || return 1
  run build -i "$D/keys.txt" --values -o "$D/floor.rbn" --memory-limit 64M
  rc_is 2 "build --values --memory-limit 64M" || return 1
  err_has "run in memory" || return 1
}

group_memory() {
  make_line_keys
  t memory.limit_bounds_peak_rss case_memory_limit_bounds_peak_rss
  t memory.limit_below_the_floor case_memory_limit_below_the_floor
}

# ------------------------------------------------------------------------------------------

echo "ribbon: $RIBBON, $N keys per set"
for group in "${SELECTED[@]}"; do
  case "$group" in
    lines | integers | query | errors | files | outofcore | variants | reliability | memory)
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
