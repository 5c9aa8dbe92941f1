# shellcheck shell=bash
# test_cli.sh's group reliability: what -o may replace, long paths, number ranges, filters
# that are not regular files, temporaries of killed builds (issue #14). Sourced by test_cli.sh.

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
