# shellcheck shell=bash
# The cases of the `groups` group of test_cli.sh: `ribbon build --groups --out-dir`, a file
# per group, each the bytes `ribbon build` writes for that group's keys alone; names escaped;
# bad input refused with nothing written; `ribbon build --groups -o`, one filter set, queried
# and verified by group.

# $D/groups/pairs.tsv: group<TAB>key lines, groups of 0-3000 keys (one group with a tab in its
# key, names that need escaping), shuffled; $D/groups/G.keys: each group's keys alone.
make_group_pairs() {
  mkdir -p "$D/groups"
  perl -e '
    my ($n, $dir) = @ARGV;
    my @names = ("a", "b/c", ".dot", "", "x y", "%25", "long-group");
    my @sizes = (3000, 1, 2, 64, 700, 5, $n);
    my @lines;
    for my $g (0 .. $#names) {
      open(my $keys, ">", "$dir/$g.keys") or die;
      for my $i (1 .. $sizes[$g]) {
        my $key = $g == 4 ? "k\t$i" : "g$g-$i";  # a key may hold a tab: split at the first
        print $keys "$key\n";
        push @lines, "$names[$g]\t$key\n";
        push @lines, "$names[$g]\t$key\n" if $i % 97 == 0;  # repeated pairs count once
      }
    }
    srand(7);
    for (my $i = $#lines; $i > 0; --$i) { my $j = int(rand($i + 1)); @lines[$i, $j] = @lines[$j, $i]; }
    open(my $out, ">", "$dir/pairs.tsv") or die;
    print $out @lines;' "$N" "$D/groups"
}

# The escaped file names of make_group_pairs's groups, in its order.
GROUP_FILES=("a.ribbon" "b%2Fc.ribbon" "%2Edot.ribbon" "%.ribbon" "x%20y.ribbon" "%2525.ribbon"
             "long-group.ribbon")

case_groups_each_file_is_its_group_built_alone() {
  build_ok --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/out" -r 7 || return 1
  dir_holds "$D/groups/out" "${GROUP_FILES[@]}" || return 1
  err_has "7 groups" || return 1
  local g
  for g in "${!GROUP_FILES[@]}"; do
    build_ok -i "$D/groups/$g.keys" -o "$D/groups/alone.ribbon" -r 7 || return 1
    same_file "$D/groups/out/${GROUP_FILES[$g]}" "$D/groups/alone.ribbon" || return 1
  done
}

case_groups_threads_do_not_matter() {
  build_ok --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/t1" -t 1 -q || return 1
  build_ok --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/t2" -t 2 -q || return 1
  local name
  for name in "${GROUP_FILES[@]}"; do
    same_file "$D/groups/t1/$name" "$D/groups/t2/$name" || return 1
  done
}

case_groups_gpu_backend() {
  # Where this build has CUDA and a GPU is present, --backend gpu writes the CPU's files
  # (every group in the same launches); elsewhere it is an error that says why, and writes
  # nothing. A filter set (-o) builds on the CPU only.
  run build --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/gpu" --backend gpu -q
  if [[ $RC -eq 0 ]]; then
    build_ok --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/cpu" --backend cpu -q ||
      return 1
    local name
    for name in "${GROUP_FILES[@]}"; do
      same_file "$D/groups/gpu/$name" "$D/groups/cpu/$name" || return 1
    done
  else
    rc_is 2 "build --groups --out-dir --backend gpu" || return 1
    err_has "the GPU backend" || return 1
    absent "$D/groups/gpu" || return 1
  fi
  run build --groups -i "$D/groups/pairs.tsv" -o "$D/groups/gpu-set.ribbon" --backend gpu
  rc_is 2 "build --groups -o --backend gpu" || return 1
  absent "$D/groups/gpu-set.ribbon"
}

case_groups_u64_pairs() {
  # (group, key) pairs of 8-byte integers, and the keys of group 5 alone.
  perl -e '
    my $dir = shift;
    open(my $pairs, ">", "$dir/pairs.u64") or die;
    open(my $five, ">", "$dir/five.u64") or die;
    binmode $pairs; binmode $five;
    for my $i (0 .. 9999) {
      my $g = $i % 7 == 0 ? 18446744073709551615 : $i % 5;
      my $key = ($i * 2654435761) % 4294967296 * 4096 + $i;
      print $pairs pack("Q<Q<", $g, $key);
      print $five pack("Q<", $key) if $g == 18446744073709551615;
    }' "$D/groups"
  build_ok --groups --format u64 -i "$D/groups/pairs.u64" --out-dir "$D/groups/ints" -q || return 1
  dir_holds "$D/groups/ints" 0.ribbon 1.ribbon 2.ribbon 3.ribbon 4.ribbon \
    18446744073709551615.ribbon || return 1
  build_ok --format u64 -i "$D/groups/five.u64" -o "$D/groups/five.ribbon" -q || return 1
  same_file "$D/groups/ints/18446744073709551615.ribbon" "$D/groups/five.ribbon" || return 1
  head -c 24 "$D/groups/pairs.u64" >"$D/groups/odd.u64"
  run build --groups --format u64 -i "$D/groups/odd.u64" --out-dir "$D/groups/odd"
  rc_is 2 "build --groups of an odd count of integers" || return 1
  err_has "odd number" || return 1
  absent "$D/groups/odd"
}

case_groups_bad_input_writes_nothing() {
  printf 'a\tk1\nno tab here\n' >"$D/groups/bad.tsv"
  run build --groups -i "$D/groups/bad.tsv" --out-dir "$D/groups/bad"
  rc_is 2 "build --groups of a line without a tab" || return 1
  err_has "bad.tsv:2: no tab" || return 1
  absent "$D/groups/bad" || return 1
  run build --groups -i "$D/groups/pairs.tsv" -o "$D/groups/set.ribbon" --out-dir "$D/groups/x"
  rc_is 2 "build --groups -o --out-dir" || return 1
  err_has "not both" || return 1
  absent "$D/groups/set.ribbon" || return 1
  run build --groups -i "$D/groups/pairs.tsv" --out-dir "$D/groups/pairs.tsv"
  rc_is 2 "build --groups --out-dir FILE" || return 1
  err_has "not a directory" || return 1
  run build -i "$D/groups/pairs.tsv" --out-dir "$D/groups/x"
  rc_is 2 "build --out-dir without --groups" || return 1
  err_has "--out-dir is for --groups" || return 1
  absent "$D/groups/x"
}

# -o: one filter set. Every pair positive under its group (verify), another group's keys
# and unknown groups at about 2^-r, the same bytes whatever the threads and in or out of core.
case_groups_set_answers_every_pair() {
  build_ok --groups -i "$D/groups/pairs.tsv" -o "$D/groups/set.ribbon" || return 1
  err_has "a filter set of 7 groups" || return 1
  local g names=("a" "b/c" ".dot" "" "x y" "%25" "long-group")
  for g in "${!names[@]}"; do
    run verify "$D/groups/set.ribbon" -i "$D/groups/$g.keys" --group "${names[$g]}"
    rc_is 0 "verify --group '${names[$g]}'" || return 1
  done
  run query "$D/groups/set.ribbon" --group "b/c" -i "$D/groups/0.keys" -c
  out_has "3000 queried" || return 1
  local positive
  positive=$(awk '{print $3}' "$OUT")
  [[ ${positive} -le 40 ]] || { fail "3000 keys of group a asked under b/c: ${positive} positive"; return 1; }
  run query "$D/groups/set.ribbon" --group "no such group" -i "$D/groups/0.keys" -c
  positive=$(awk '{print $3}' "$OUT")
  [[ ${positive} -le 40 ]] || { fail "3000 keys under an unknown group: ${positive} positive"; return 1; }
  run info "$D/groups/set.ribbon" --json
  out_has '"group_count": 7' || return 1
  out_has '"format_version": 7' || return 1
  out_has '"group_names": 7' || return 1
  build_ok --groups -i "$D/groups/pairs.tsv" -o "$D/groups/set1.ribbon" -t 1 -q || return 1
  same_file "$D/groups/set.ribbon" "$D/groups/set1.ribbon" || return 1
  build_ok --groups -i "$D/groups/pairs.tsv" -o "$D/groups/set-ooc.ribbon" --memory-limit 1M \
    --tmp-dir "$D/groups" || return 1
  err_has "out of core" || return 1
  same_file "$D/groups/set.ribbon" "$D/groups/set-ooc.ribbon" || return 1
}

case_groups_set_of_u64_pairs() {
  build_ok --groups --format u64 -i "$D/groups/pairs.u64" -o "$D/groups/ints.ribbon" -q || return 1
  run verify "$D/groups/ints.ribbon" --format u64 -i "$D/groups/five.u64" \
    --group 18446744073709551615
  rc_is 0 "verify the u64 set's group 2^64-1" || return 1
  run query "$D/groups/ints.ribbon" --format u64 -i "$D/groups/five.u64" --group x
  rc_is 2 "query --group x of a set of integer groups" || return 1
  err_has "--group" || return 1
}

# A (group, key) pair cut between two chunks is read whole (the reader carries the cut part
# to the next chunk): chunks of 16 to 47 bytes cut the pairs at every place, and the set and
# the files per group are the bytes that one chunk gives.
case_groups_pairs_cut_between_chunks() {
  local g="$D/groups"
  perl -e '
    my $dir = shift;
    open(my $text, ">", "$dir/cut.tsv") or die;
    open(my $ints, ">", "$dir/cut.u64") or die;
    binmode $ints;
    for my $i (1 .. 60) {
      print $text "g", $i % 4, "\tk\t$i\n";  # a key may hold a tab
      print $ints pack("Q<Q<", $i % 3, $i * 2654435761);
    }' "$g"
  local format input
  for format in lines u64; do
    input=$g/cut.tsv
    [[ $format == u64 ]] && input=$g/cut.u64
    build_ok --groups --format "$format" -i "$input" -o "$g/cut-$format.ribbon" -q || return 1
    build_ok --groups --format "$format" -i "$input" --out-dir "$g/cut-$format" -q || return 1
    local bytes
    for bytes in $(seq 16 47); do
      RIBBON_CLI_CHUNK_BYTES=$bytes build_ok --groups --format "$format" -i "$input" \
        -o "$g/cut-small.ribbon" -q || return 1
      same_file "$g/cut-small.ribbon" "$g/cut-$format.ribbon" || return 1
      rm -rf "$g/cut-small"
      RIBBON_CLI_CHUNK_BYTES=$bytes build_ok --groups --format "$format" -i "$input" \
        --out-dir "$g/cut-small" -q || return 1
      diff -rq "$g/cut-small" "$g/cut-$format" >/dev/null ||
        { fail "--format $format --out-dir in chunks of $bytes bytes: other files"; return 1; }
    done
  done
}

case_groups_set_refusals() {
  run query "$D/groups/set.ribbon" a
  rc_is 2 "query a set without --group" || return 1
  err_has "give --group" || return 1
  build_ok -i "$D/groups/0.keys" -o "$D/groups/plain.ribbon" -q || return 1
  run query "$D/groups/plain.ribbon" --group a g0-1
  rc_is 2 "query a filter with --group" || return 1
  err_has "filter sets" || return 1
  run build --groups -i "$D/groups/pairs.tsv" -o "$D/groups/c.ribbon" --layout compact \
    --no-group-names
  rc_is 2 "build --groups -o --layout compact --no-group-names" || return 1
  err_has "a compact set is format version 7" || return 1
  absent "$D/groups/c.ribbon" || return 1
  # Bad input: an error naming it, and no set written (nor temporary files).
  run build --groups -i "$D/groups/bad.tsv" -o "$D/groups/bad.ribbon" --tmp-dir "$D/groups"
  rc_is 2 "build --groups -o of a line without a tab" || return 1
  err_has "bad.tsv:2: no tab" || return 1
  absent "$D/groups/bad.ribbon" || return 1
  run build --groups --format u64 -i "$D/groups/odd.u64" -o "$D/groups/odd.ribbon"
  rc_is 2 "build --groups -o of an odd count of integers" || return 1
  err_has "odd number" || return 1
  absent "$D/groups/odd.ribbon" || return 1
  [[ -z $(find "$D/groups" -maxdepth 1 -name '.ribbon-tmp-*' -print -quit) ]] ||
    { fail "temporary files left: $(ls -a "$D/groups")"; return 1; }
}

group_groups() {
  make_group_pairs
  t groups.each_file_is_its_group_built_alone case_groups_each_file_is_its_group_built_alone
  t groups.threads_do_not_matter case_groups_threads_do_not_matter
  t groups.u64_pairs case_groups_u64_pairs
  t groups.gpu_backend case_groups_gpu_backend
  t groups.bad_input_writes_nothing case_groups_bad_input_writes_nothing
  t groups.set_answers_every_pair case_groups_set_answers_every_pair
  t groups.set_of_u64_pairs case_groups_set_of_u64_pairs
  t groups.set_refusals case_groups_set_refusals
  t groups.pairs_cut_between_chunks case_groups_pairs_cut_between_chunks
}
