# shellcheck shell=bash
# Helpers shared by the cases of test_cli.sh (which sources this file): running `ribbon`,
# checking its exit status and output, and making the key files. They use test_cli.sh's
# RIBBON, D (the scratch directory), N (keys per set), OUT and ERR.

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

# setup_keys_filter GROUP: builds $D/keys.rbn (r = 16) from $D/keys.txt for a group's cases;
# on failure counts one failure for the group and returns non-zero.
setup_keys_filter() {
  build_ok -i "$D/keys.txt" -o "$D/keys.rbn" -r 16 && return 0
  echo "FAIL $1.setup: $REASON"
  FAILED=$((FAILED + 1))
  return 1
}
