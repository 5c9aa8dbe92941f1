# shellcheck shell=bash
# The cases of the `corpus` group of test_cli.sh: the golden corpus of tests/data/corpus
# (its README.md). Its files are the truth: `ribbon build` re-creates each one byte for byte
# from the recorded inputs with the recorded command, `ribbon verify` accepts each, `ribbon
# info --json` prints the recorded copy and `ribbon query` the recorded answers.

CORPUS_DIR=$(realpath "$CLI_DIR/../data/corpus")

# corpus_entries: the manifest's entries (tab-separated columns, README.md).
corpus_entries() {
  grep -v -e '^#' -e '^[[:space:]]*$' "$CORPUS_DIR/MANIFEST.tsv"
}

case_corpus_checksums() {
  # Every committed file as recorded (SHA256SUMS), and every file the manifest names listed.
  (cd "$CORPUS_DIR" && sha256sum --quiet --strict -c SHA256SUMS) >"$OUT" 2>&1 ||
    { fail "sha256sum -c: $(head -c 600 "$OUT" | tr '\n' '|')"; return 1; }
  local file version kind keys inputs probes answers command path
  while IFS=$'\t' read -r file version kind keys inputs probes answers command; do
    for path in "$file" "${file%.rbn}.info.json" "$probes" "$answers" ${inputs//,/ }; do
      [[ $path == inputs/lines_270000.txt ]] && continue  # generated, checked by make_corpus.sh
      grep -qF "  $path" "$CORPUS_DIR/SHA256SUMS" || { fail "$path is not in SHA256SUMS"; return 1; }
    done
  done < <(corpus_entries)
}

case_corpus_inputs_from_their_generators() {
  bash "$CORPUS_DIR/make_corpus.sh" --inputs "$D/corpus-inputs" >"$OUT" 2>"$ERR" ||
    { fail "make_corpus.sh --inputs: $(stderr_text)"; return 1; }
  local dir
  for dir in inputs probes; do
    diff -r "$D/corpus-inputs/$dir" "$CORPUS_DIR/$dir" >"$OUT" ||
      { fail "generated $dir differ: $(head -c 300 "$OUT" | tr '\n' '|')"; return 1; }
  done
}

case_corpus_writer_recreates_every_file() {
  bash "$CORPUS_DIR/make_corpus.sh" "$RIBBON" "$D/corpus-written" >"$OUT" 2>"$ERR" ||
    { fail "make_corpus.sh: $(stderr_text)"; return 1; }
  local file version kind keys inputs probes answers command written=0
  while IFS=$'\t' read -r file version kind keys inputs probes answers command; do
    [[ $command == - ]] && continue
    same_file "$D/corpus-written/$file" "$CORPUS_DIR/$file" || return 1
    written=$((written + 1))
  done < <(corpus_entries)
  [[ $written -ge 20 ]] || fail "only $written files re-created"
}

case_corpus_golden_files_of_tests_data_are_the_same() {
  local name
  for name in v1_lines_3000.rbn v1_u64_5000_w128_r13.rbn v4_values_3000_c6.rbn v5_lines_3000.rbn; do
    same_file "$CORPUS_DIR/$name" "$CLI_DIR/../data/$name" || return 1
  done
}

case_corpus_never_replaced() {
  # make_corpus.sh writes into the corpus only new entries.
  local before
  before=$(sha256sum "$CORPUS_DIR/v5_words_bumped_w64.rbn")
  bash "$CORPUS_DIR/make_corpus.sh" --new "$RIBBON" v5_words_bumped_w64.rbn >"$OUT" 2>"$ERR" &&
    { fail "--new replaced an entry"; return 1; }
  err_has "never replaced" || return 1
  bash "$CORPUS_DIR/make_corpus.sh" "$RIBBON" "$CORPUS_DIR" v5_words_bumped_w64.rbn >"$OUT" 2>"$ERR" &&
    { fail "make_corpus.sh wrote into the corpus"; return 1; }
  err_has "OUT_DIR is the corpus" || return 1
  [[ $(sha256sum "$CORPUS_DIR/v5_words_bumped_w64.rbn") == "$before" ]] || fail "the file changed"
}

# The --format of a manifest command's input ("lines" where it names none).
input_format_of() {
  local format=lines
  [[ $1 =~ --format\ ([a-z0-9]+) ]] && format=${BASH_REMATCH[1]}
  echo "$format"
}

case_corpus_verify_and_info() {
  local file version kind keys inputs probes answers command
  while IFS=$'\t' read -r file version kind keys inputs probes answers command; do
    run verify -q "$CORPUS_DIR/$file"
    rc_is 0 "verify $file" || return 1
    # Every key of the input is positive (retrieval: has its value), where the input is
    # committed and not pairs of a set.
    if [[ $kind != set-* && $inputs != inputs/lines_270000.txt ]]; then
      local format
      format=$(input_format_of "$command")
      [[ $command == - && $keys == u64 ]] && format=u64
      local -a values=()
      [[ $kind == values ]] && values=(--values)
      run verify -q "$CORPUS_DIR/$file" "${values[@]}" --format "$format" -i "$CORPUS_DIR/$inputs"
      rc_is 0 "verify $file -i $inputs" || return 1
    fi
    # `ribbon info --json` in the corpus directory: the recorded copy (the path is the name).
    (cd "$CORPUS_DIR" && "$RIBBON" info --json "$file") >"$OUT" 2>"$ERR" ||
      { fail "info --json $file: $(stderr_text)"; return 1; }
    same_file "$OUT" "$CORPUS_DIR/${file%.rbn}.info.json" || return 1
    grep -qF "\"format_version\": $version," "$OUT" || { fail "$file is not version $version"; return 1; }
  done < <(corpus_entries)
}

case_corpus_query_answers() {
  # `ribbon query` (by group for sets, --values for retrieval) answers every probe as recorded.
  local file version kind keys inputs probes answers command
  while IFS=$'\t' read -r file version kind keys inputs probes answers command; do
    bash "$CORPUS_DIR/make_corpus.sh" --answers "$RIBBON" "$file" >"$OUT" 2>"$ERR" ||
      { fail "answers of $file: $(stderr_text)"; return 1; }
    same_file "$OUT" "$CORPUS_DIR/$answers" || return 1
  done < <(corpus_entries)
}

group_corpus() {
  t corpus.checksums case_corpus_checksums
  t corpus.inputs_from_their_generators case_corpus_inputs_from_their_generators
  t corpus.writer_recreates_every_file case_corpus_writer_recreates_every_file
  t corpus.golden_files_of_tests_data_are_the_same case_corpus_golden_files_of_tests_data_are_the_same
  t corpus.never_replaced case_corpus_never_replaced
  t corpus.verify_and_info case_corpus_verify_and_info
  t corpus.query_answers case_corpus_query_answers
}
