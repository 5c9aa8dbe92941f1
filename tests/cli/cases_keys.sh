# shellcheck shell=bash
# test_cli.sh's groups lines, integers and query: the key formats (lines, u64, hex64), stdin
# and several inputs, and the query, verify, info and help commands. Sourced by test_cli.sh.

# SC2002: `cat FILE | ribbon` is on purpose: stdin must be a pipe, not a redirected file.
# shellcheck disable=SC2002

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

# --layout: the same filter in either frame (the standard one for readers of versions 1-4):
# the same answers, the compact file smaller by the frames' difference, a bad name refused.
case_layout() {
  local layout
  for layout in standard compact; do
    build_ok -i "$D/keys.txt" -o "$D/keys-$layout.rbn" -r 16 --layout "$layout" || return 1
    run query "$D/keys-$layout.rbn" -i "$D/others.txt"
    mv "$OUT" "$D/others-$layout.out"
  done
  same_file "$D/others-standard.out" "$D/others-compact.out" || return 1
  cmp -s "$D/keys-compact.rbn" "$D/keys.rbn" || fail "auto is not compact for a small filter" || return 1
  run info "$D/keys-standard.rbn"
  out_has "format version  3 (standard layout)" || return 1
  local layers saved
  layers=$(grep -c '^layer ' "$OUT")
  saved=$(($(stat -c %s "$D/keys-standard.rbn") - $(stat -c %s "$D/keys-compact.rbn")))
  # 128 + 128 a layer against 56 + 24 a layer, give or take the sections' alignment (64 or 16).
  [[ ${saved} -ge $((72 + 104 * layers - 64 * (2 * layers))) && ${saved} -le $((72 + 104 * layers + 64 * 2 * layers)) ]] ||
    fail "standard - compact = ${saved} bytes for ${layers} layers" || return 1
  run build -i "$D/keys.txt" -o "$D/keys-x.rbn" --layout tiny
  rc_is 2 "--layout tiny" || return 1
  [[ ! -e "$D/keys-x.rbn" ]] || fail "a refused build wrote a file"
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
  for field in '"key_count": '"$N"',' '"format_version": 5,' '"layout": "compact",' '"threshold_encoding": "1+-bit",' '"key_kind": "bytes",' \
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

group_query() {
  make_line_keys
  setup_keys_filter query || return 0
  t query.prints_exactly_the_members case_query_prints_members
  t query.exit_status case_query_exit_status
  t verify.ok_and_missing_keys case_verify
  t info.fields case_info
  t build.layout case_layout
  t build.empty_input case_empty_input
  t help case_help
}
