# shellcheck shell=bash
# test_cli.sh's groups errors and files: bad input and options (exit 2, a message naming the
# file and place, no output left), output paths, full disks, damaged filter files. Sourced by
# test_cli.sh.

# SC2002: `cat FILE | ribbon` is on purpose: stdin must be a pipe, not a redirected file.
# shellcheck disable=SC2002

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
  # A version no release wrote, and version 7 needing a feature this reader does not know.
  cp "$D/keys.rbn" "$D/v8.rbn"
  printf '\010' | dd of="$D/v8.rbn" bs=1 seek=8 conv=notrunc status=none
  damaged_filter_fails "$D/v8.rbn" "unsupported format version 8" || return 1
  cp "$D/keys.rbn" "$D/v7.rbn"
  printf '\007\000\000\000\000\002' | dd of="$D/v7.rbn" bs=1 seek=8 conv=notrunc status=none
  damaged_filter_fails "$D/v7.rbn" "needs feature bit 9, which this reader does not know; upgrade ribbon"
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
