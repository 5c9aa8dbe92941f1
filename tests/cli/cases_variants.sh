# shellcheck shell=bash
# test_cli.sh's group variants: standard and homogeneous filters, retrieval, fractional bits
# per key. Sourced by test_cli.sh.

# SC2002: `cat FILE | ribbon` is on purpose: stdin must be a pipe, not a redirected file.
# shellcheck disable=SC2002

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
  err_has "standard-retrieval, 24-bit values" || return 1
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

# --check-bits: members found with their values, non-members at about 2^-C, --absent, plain
# membership queries of the file, and the options refused.
case_check_bits() {
  make_value_lines
  build_ok -i "$D/kv.tsv" --values --check-bits 12 -o "$D/kv-checked.rbn" || return 1
  err_has "retrieval, 20-bit values + 12 check bits" || return 1
  run query "$D/kv-checked.rbn" --values -i "$D/kv-keys.txt"
  rc_is 0 "query --values of a file with check bits" || return 1
  same_file "$OUT" "$D/kv-expected.tsv" || return 1
  run verify "$D/kv-checked.rbn" -i "$D/kv.tsv" --values
  rc_is 0 "verify --values with check bits" || return 1
  run query "$D/kv-checked.rbn" -i "$D/kv-keys.txt" --count
  out_is "$((N + 2)) queried, $((N + 2)) positive" || return 1
  # 40000 non-members: about 10 found at 2^-12 (more than 40 has probability below 1e-12).
  seq 1 40000 | sed 's/^/absent-/' >"$D/others.txt"
  run query "$D/kv-checked.rbn" --values -i "$D/others.txt"
  local found
  found=$(wc -l <"$OUT")
  [[ ${found} -le 40 ]] || fail "${found} of 40000 non-members found at 2^-12" || return 1
  run query "$D/kv-checked.rbn" --values --absent none -i "$D/others.txt"
  [[ $(grep -c $'\tnone$' "$OUT") -eq $((40000 - found)) ]] ||
    fail "--absent does not print the keys not found" || return 1
  run query "$D/kv-checked.rbn" --values absent-x absent-y
  if [[ -s "$OUT" ]]; then rc_is 0 "query --values finding a key"; else rc_is 1 "query --values finding no key"; fi || return 1
  run info "$D/kv-checked.rbn"
  out_has "format version  5 (compact layout)" || return 1
  out_has "check bits      12 (20 value bits" || return 1
  run info --json "$D/kv-checked.rbn"
  out_has '"check_bits": 12' || return 1
  # Refused: check bits of a filter, --absent without check bits, value + check bits over 32.
  mkdir -p "$D/out"
  run build -i "$D/keys.txt" -o "$D/out/x.rbn" --check-bits 4
  rc_is 2 "build --check-bits of a filter" || return 1
  err_has "--check-bits is for builds with values" || return 1
  build_ok -i "$D/kv.tsv" --values -o "$D/kv-unchecked.rbn" || return 1
  run query "$D/kv-unchecked.rbn" --values --absent - key-1
  rc_is 2 "query --absent without check bits" || return 1
  err_has "--absent needs a retrieval structure with check bits" || return 1
  run build -i "$D/kv.tsv" --values --check-bits 13 -o "$D/out/x.rbn"
  rc_is 2 "build with 20 value bits + 13 check bits" || return 1
  err_has "at most 32" || return 1
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
  t values.check_bits case_check_bits
}
