# shellcheck shell=bash
# test_cli.sh's groups outofcore and memory: builds under --memory-limit that spill to
# --tmp-dir (same bytes, nothing left behind) and stay within the limit. Sourced by
# test_cli.sh.

# SC2002: `cat FILE | ribbon` is on purpose: stdin must be a pipe, not a redirected file.
# shellcheck disable=SC2002

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

case_values_out_of_core() {
  mkdir -p "$D/tmp" "$D/ooc-out"
  # key<TAB>value lines, each key twice with its one value: the in-memory file's bytes.
  awk '{ print $0 "\t" (NR * 7919) % 65536 }' "$D/keys.txt" >"$D/kv.tsv"
  cat "$D/kv.tsv" "$D/kv.tsv" >"$D/kv2.tsv"
  build_ok -i "$D/kv.tsv" --values -r 16 -o "$D/kv.rbn" || return 1
  build_ok -i "$D/kv2.tsv" --values -r 16 -o "$D/kv-ooc.rbn" --memory-limit 64K \
    --tmp-dir "$D/tmp" || return 1
  err_has "out of core" || return 1
  same_file "$D/kv-ooc.rbn" "$D/kv.rbn" || return 1
  run verify "$D/kv-ooc.rbn" -i "$D/kv.tsv" --values
  rc_is 0 "verify --values of the out-of-core file" || return 1
  # Integer keys with a --value-file and check bits.
  perl -e 'for my $i (0 .. $ARGV[0] - 1) { print pack("Q<", ($i * 40503) % 4096) }' "$N" \
    >"$D/values.u64"
  build_ok -i "$D/ints.u64" --format u64 --value-file "$D/values.u64" -r 12 --check-bits 6 \
    -o "$D/iv.rbn" || return 1
  build_ok -i "$D/ints.u64" --format u64 --value-file "$D/values.u64" -r 12 --check-bits 6 \
    -o "$D/iv-ooc.rbn" --memory-limit 64K --tmp-dir "$D/tmp" || return 1
  same_file "$D/iv-ooc.rbn" "$D/iv.rbn" || return 1
  dir_holds "$D/tmp" || return 1
  # Two values of one key, far apart: the key and both lines named, nothing written.
  { cat "$D/kv.tsv"; printf 'key-7\t1\n'; } >"$D/kv-conflict.tsv"
  run build -i "$D/kv-conflict.tsv" --values -r 16 -o "$D/ooc-out/c.rbn" --memory-limit 64K \
    --tmp-dir "$D/tmp"
  rc_is 2 "out-of-core build with two values of one key" || return 1
  err_has "'key-7' ($D/kv-conflict.tsv:7 and $D/kv-conflict.tsv:$((N + 1)))" || return 1
  dir_holds "$D/ooc-out" || return 1
  dir_holds "$D/tmp" || return 1
  # A value file one value short, one too long; a value too wide; no --bits.
  head -c $((8 * N - 8)) "$D/values.u64" >"$D/values-short.u64"
  run build -i "$D/ints.u64" --format u64 --value-file "$D/values-short.u64" -r 12 \
    -o "$D/ooc-out/s.rbn" --memory-limit 64K --tmp-dir "$D/tmp"
  rc_is 2 "out-of-core build with too few values" || return 1
  err_has "fewer values than the keys" || return 1
  { cat "$D/values.u64"; head -c 8 "$D/values.u64"; } >"$D/values-long.u64"
  run build -i "$D/ints.u64" --format u64 --value-file "$D/values-long.u64" -r 12 \
    -o "$D/ooc-out/s.rbn" --memory-limit 64K --tmp-dir "$D/tmp"
  rc_is 2 "out-of-core build with too many values" || return 1
  err_has "more values than the $N keys" || return 1
  run build -i "$D/ints.u64" --format u64 --value-file "$D/values.u64" -r 11 \
    -o "$D/ooc-out/s.rbn" --memory-limit 64K --tmp-dir "$D/tmp"
  rc_is 2 "out-of-core build with a value too wide" || return 1
  err_has "does not fit in --bits 11" || return 1
  run build -i "$D/kv.tsv" --values -o "$D/ooc-out/s.rbn" --memory-limit 64M
  rc_is 2 "build --values --memory-limit without --bits" || return 1
  err_has "needs -r/--bits" || return 1
  dir_holds "$D/ooc-out" || return 1
  dir_holds "$D/tmp"
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
  t outofcore.values case_values_out_of_core
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
  # With 16-bit values (a value file of 8 bytes a key): 12-byte records.
  head -c $((8 * keys)) /dev/zero >"$D/many-values.u64"
  build_ok -i "$D/many.u64" --format u64 --value-file "$D/many-values.u64" -r 16 \
    -o "$D/many-kv.rbn" -q || return 1
  build_within 48 -i "$D/many.u64" --format u64 --value-file "$D/many-values.u64" -r 16 \
    -o "$D/many-kv-48.rbn" --tmp-dir "$D/tmp" || return 1
  same_file "$D/many-kv-48.rbn" "$D/many-kv.rbn" || return 1
  dir_holds "$D/tmp"
}

case_memory_limit_below_the_floor() {
  mkdir -p "$D/tmp"
  build_ok -i "$D/keys.txt" -o "$D/floor.rbn" --memory-limit 64K --tmp-dir "$D/tmp" || return 1
  err_has "note: --memory-limit is below" || return 1
}

# A limit too small for the work (here: a variant built in memory only, beyond it) fails as
# soon as that is known, naming the smallest limit that works: exit status 2, no output, no
# temporary file left. From a file (the key count is known) before reading; from stdin once
# the keys read pass the limit.
case_memory_limit_too_small() {
  local needed
  mkdir -p "$D/tmp" "$D/small-out"
  head -c $((8 * 2000000)) /dev/urandom >"$D/small.u64"
  run build -i "$D/small.u64" --format u64 --variant standard -o "$D/small-out/s.rbn" \
    --memory-limit 24M --tmp-dir "$D/tmp"
  rc_is 2 "build --variant standard --memory-limit 24M (too small)" || return 1
  err_has "in memory only" || return 1
  needed=$(grep -o 'at least [0-9]*M' "$ERR" | grep -o '[0-9]*')
  [[ -n $needed && $needed -gt 24 ]] || fail "no limit above 24M named: $(stderr_text)" ||
    return 1
  dir_holds "$D/small-out" || return 1
  dir_holds "$D/tmp" || return 1
  cat "$D/small.u64" | "$RIBBON" build --format u64 --variant standard -o "$D/small-out/s.rbn" \
    --memory-limit 24M --tmp-dir "$D/tmp" 2>"$ERR"
  RC=$?
  rc_is 2 "build --variant standard --memory-limit 24M from stdin (too small)" || return 1
  err_has "more than" || return 1
  err_has "at least" || return 1
  dir_holds "$D/small-out" || return 1
  dir_holds "$D/tmp" || return 1
  # The limit named works, and builds the bytes of a build without one.
  build_ok -i "$D/small.u64" --format u64 --variant standard -o "$D/small-out/s.rbn" \
    --memory-limit "${needed}M" --tmp-dir "$D/tmp" || return 1
  build_ok -i "$D/small.u64" --format u64 --variant standard -o "$D/small-out/s0.rbn" || return 1
  same_file "$D/small-out/s.rbn" "$D/small-out/s0.rbn" || return 1
  dir_holds "$D/tmp"
}

group_memory() {
  make_line_keys
  t memory.limit_bounds_peak_rss case_memory_limit_bounds_peak_rss
  t memory.limit_below_the_floor case_memory_limit_below_the_floor
  t memory.limit_too_small_is_a_clear_error case_memory_limit_too_small
}
