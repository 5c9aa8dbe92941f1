#!/usr/bin/env bash
# The golden corpus (README.md): writes its files from the recorded inputs with the commands of
# MANIFEST.tsv, its inputs and probes from their generators, and its answers for new entries.
#
# Usage:
#   make_corpus.sh RIBBON OUT_DIR [FILE...]
#       Writes every entry that has a command (or the FILEs named) into OUT_DIR, running the
#       manifest's command from a scratch directory whose inputs/ holds the recorded inputs
#       (and the generated ones, checked against their sha256). OUT_DIR must not be the
#       corpus: this is the writer check (compare OUT_DIR with the corpus, byte for byte).
#   make_corpus.sh --new RIBBON FILE...
#       Adds new entries (lines already in MANIFEST.tsv) to the corpus: FILE (built as above,
#       or copied in by hand where the command is "-"), its answers file (RIBBON's answers to
#       its probes) and NAME.info.json (`ribbon info --json FILE`, FILE = NAME.rbn); appends
#       their sha256 to SHA256SUMS. Refuses to replace anything: old golden files are never
#       regenerated.
#   make_corpus.sh --answers RIBBON FILE
#       Prints RIBBON's answers to FILE's probes (`ribbon query`), as answers/ records them.
#   make_corpus.sh --inputs OUT_DIR
#       Writes every committed input and probe file from its generator into OUT_DIR/inputs and
#       OUT_DIR/probes (they must equal the corpus's).
set -euo pipefail

CORPUS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Scratch directories (scratch_dir), removed when the script exits, however it exits.
SCRATCH_DIRS=()
trap 'rm -rf "${SCRATCH_DIRS[@]}"' EXIT
scratch_dir() {
  SCRATCH_DIRS+=("$(mktemp -d)")
}

# Inputs made at build time, not committed (too large): name, generator, sha256 of the output.
generated_inputs() {
  local dir=$1
  seq -f 'k%.0f' 1 270000 >"${dir}/lines_270000.txt"
  echo "29b75ee0fcba8c1454db4949c1bdf6169fd5805dc9076f5f46b59dc295b0a105  ${dir}/lines_270000.txt" |
    sha256sum --quiet -c - >&2 || {
    echo "make_corpus.sh: the generated input lines_270000.txt differs from the recorded one" >&2
    return 1
  }
}

# The committed inputs and probes, from their generators (seq, awk and perl: 64-bit integers).
write_inputs() {
  local d=$1
  mkdir -p "${d}/inputs" "${d}/probes"
  seq 1 3000 >"${d}/inputs/seq_3000.txt"
  seq 1 3000 | awk '{ printf "%d\t%d\n", $1, $1 % 1000 }' >"${d}/inputs/seq_3000_values.tsv"
  seq 1 5000 >"${d}/probes/seq_5000.txt"
  { seq -f 'k%.0f' 1 64 270000; seq -f 'k%.0f' 270001 272000; } >"${d}/probes/lines_270000_sub.txt"
  perl - "${d}" <<'PERL'
use strict;
use warnings;
my $d = shift;
my $M32 = 4294967296;
sub out { my ($name, @lines) = @_; open(my $f, ">:raw", "$d/$name") or die "$name: $!"; print $f @lines; close($f) or die; }
sub distinct { my %seen; for (@_) { die "repeated probe $_" if $seen{$_}++; } return @_; }
sub hi_lo { my ($hi, $lo) = @_; return (($hi % $M32) << 32) | ($lo % $M32); }
# i * 0x9E3779B97F4A7C15 mod 2^64, in 32-bit halves (perl's integers are 64-bit, not modular).
sub golden { my $i = shift; my $lo = $i * 0x7F4A7C15; return hi_lo($i * 0x9E3779B9 + int($lo / $M32), $lo); }

# Text keys: varied bytes (spaces, UTF-8, a byte that is not UTF-8), no tab, CR or LF.
my @tails = ("", " smith", "\xc3\xa9", "/path/x", "\xe2\x82\xac", "", " ", "\xff", "-");
my @words = map { sprintf("user-%05d-%08x", $_, ($_ * 2654435761) % $M32) . $tails[$_ % 9] } 0 .. 2999;
out("inputs/words_3000.txt", map { "$_\n" } @words);
out("probes/words_5000.txt", map { "$_\n" } distinct(@words, map { "nonmember-$_" } 0 .. 1999));

# Integer keys, u64 (little-endian): 0, 2^64 - 1 and 3998 others.
my @ints = map { $_ == 1 ? ~0 : hi_lo($_ * 2654435761, $_) } 0 .. 3999;
out("inputs/ints_4000.u64", map { pack("Q<", $_) } @ints);
my @int_others = map { hi_lo($_ * 2246822519 + 1, $_ + 100000) } 0 .. 1999;
out("probes/ints_6000.hex", map { sprintf("%x\n", $_) } distinct(@ints, @int_others));

# Integer keys as hex64 text in mixed styles (and CRLF); probes in plain lower-case hex.
my @hex = map { hi_lo($_ * 2246822519 + 7, $_ * 3266489917 + 11) } 0 .. 4499;
my @styles = ("%x\n", "0x%016X\n", "0X%x\r\n", "%016x\n");
out("inputs/ints_2500.hex", map { sprintf($styles[$_ % 4], $hex[$_]) } 0 .. 2499);
out("probes/ints_4500.hex", map { sprintf("%x\n", $_) } distinct(@hex));

# The version-1 golden file's keys: i * 0x9E3779B97F4A7C15, i < 5000 (non-members: i < 7000).
out("inputs/golden_u64_5000.u64", map { pack("Q<", golden($_)) } 0 .. 4999);
out("probes/golden_u64_7000.hex", map { sprintf("%x\n", $_) } distinct(map { golden($_) } 0 .. 6999));

# Key<TAB>value lines: text keys with 12-bit values, hex64 keys with 20-bit values.
out("inputs/values_3000.tsv", map { sprintf("item-%d\t%d\n", $_, ($_ * 7919) % 4096) } 1 .. 3000);
out("probes/values_5000.txt", map { "item-$_\n" } 1 .. 5000);
my @hv = map { hi_lo($_ * 2654435761 + 3, $_ * 40503) } 0 .. 3999;
out("inputs/hexvalues_2000.tsv", map { sprintf("%x\t%d\n", $hv[$_], ($_ * 40503) % 1000003) } 0 .. 1999);
out("probes/hexvalues_4000.hex", map { sprintf("%x\n", $_) } distinct(@hv));

# Filter sets: group<TAB>key lines. Probes: the pairs, member keys in another group, a group
# never given, keys never given.
out("inputs/pairs_4000.tsv", map { sprintf("part-%d\tkey-%d\n", $_ % 7, $_) } 0 .. 3999);
out("probes/pairs_6000.tsv", distinct(
  (map { sprintf("part-%d\tkey-%d\n", $_ % 7, $_) } 0 .. 3999),
  (map { sprintf("part-%d\tkey-%d\n", ($_ + 1) % 7, $_) } 0 .. 999),
  (map { "part-99\tkey-$_\n" } 0 .. 499),
  (map { sprintf("part-%d\tnokey-%d\n", $_ % 7, $_) } 0 .. 499)));
# Integer groups and keys (u64 pairs); probes: decimal group<TAB>hex key.
my @pg = map { $_ % 97 == 0 ? ~0 : $_ % 5 } 0 .. 2999;
my @pk = map { hi_lo($_ * 2654435761, $_ ^ 0x5a5a) } 0 .. 3499;
out("inputs/pairs_3000.u64", map { pack("Q<Q<", $pg[$_], $pk[$_]) } 0 .. 2999);
out("probes/pairs_u64_5000.tsv", distinct(
  (map { sprintf("%u\t%x\n", $pg[$_], $pk[$_]) } 0 .. 2999),
  (map { sprintf("%u\t%x\n", ($_ % 5 + 1) % 5, $pk[$_]) } grep { $_ % 97 } 0 .. 999),
  (map { sprintf("123456789\t%x\n", $pk[$_]) } 0 .. 499),
  (map { sprintf("%u\t%x\n", $_ % 5, $pk[$_ + 3000]) } 0 .. 499)));
# Text groups, hex64 keys.
my @hk = map { hi_lo($_ * 3266489917 + 5, $_) } 0 .. 2499;
out("inputs/hexpairs_2000.tsv", map { sprintf("grp-%d\t%x\n", $_ % 4, $hk[$_]) } 0 .. 1999);
out("probes/hexpairs_4000.tsv", distinct(
  (map { sprintf("grp-%d\t%x\n", $_ % 4, $hk[$_]) } 0 .. 1999),
  (map { sprintf("grp-%d\t%x\n", ($_ + 1) % 4, $hk[$_]) } 0 .. 999),
  (map { sprintf("grp-77\t%x\n", $hk[$_]) } 0 .. 499),
  (map { sprintf("grp-%d\t%x\n", $_ % 4, $hk[$_ + 2000]) } 0 .. 499)));
PERL
  # Application metadata (format version 7's metadata section), as a data-lake index keeps it.
  printf '{"table": "s3://lake/events", "column": "user_id", "files": {"part-0.parquet": %s}}\n' \
    '{"bytes": 1048576, "mtime": 1764800000}' >"${d}/inputs/metadata.json"
}

# manifest_entries: prints the manifest's entries, one tab-separated line each.
manifest_entries() {
  grep -v -e '^#' -e '^[[:space:]]*$' "${CORPUS}/MANIFEST.tsv"
}

# entry FILE: sets the manifest columns of FILE (fails if it has no entry).
entry() {
  local line
  line=$(manifest_entries | awk -F'\t' -v f="$1" '$1 == f' | head -n 1)
  [[ -n ${line} ]] || {
    echo "make_corpus.sh: ${1} is not in MANIFEST.tsv" >&2
    return 1
  }
  IFS=$'\t' read -r _ _ e_kind e_keys e_inputs e_probes e_answers e_command <<<"${line}"
}

# build_into RIBBON FILE DIR: runs FILE's command in a scratch directory, moves FILE to DIR.
build_into() {
  local ribbon=$1 file=$2 dir=$3 scratch
  entry "${file}"
  [[ ${e_command} == "ribbon build "* ]] || {
    echo "make_corpus.sh: ${file} has no command (it is kept as recorded)" >&2
    return 1
  }
  scratch_dir
  scratch=${SCRATCH_DIRS[-1]}
  mkdir "${scratch}/inputs"
  ln -s "${CORPUS}"/inputs/* "${scratch}/inputs/"
  [[ ${e_inputs} != *inputs/lines_270000.txt* ]] || generated_inputs "${scratch}/inputs"
  local -a args
  read -r -a args <<<"${e_command#ribbon }"
  if ! (cd "${scratch}" && "${ribbon}" "${args[@]}"); then
    echo "make_corpus.sh: ${file}: ${e_command} failed" >&2
    return 1
  fi
  mv "${scratch}/${file}" "${dir}/${file}"
}

# answers RIBBON FILE: prints RIBBON's answer to each of FILE's probes (README.md, "Answers").
answers() {
  local ribbon=$1 file=$2 format=lines tmp
  entry "${file}"
  [[ ${e_keys} == u64 ]] && format=hex64
  scratch_dir
  tmp=${SCRATCH_DIRS[-1]}
  local f="${CORPUS}/${file}" p="${CORPUS}/${e_probes}"
  case ${e_kind} in
    filter)
      "${ribbon}" query "${f}" --format "${format}" -i "${p}" >"${tmp}/positive" || [[ $? -eq 1 ]]
      awk 'NR == FNR { hit[$0] = 1; next } { print (($0 in hit) ? 1 : 0) }' "${tmp}/positive" "${p}"
      ;;
    values)
      # With check bits the keys not found answer "absent"; without, every key has a value.
      local -a absent=()
      "${ribbon}" info --json "${f}" | grep -q '"check_bits": 0,' || absent=(--absent absent)
      "${ribbon}" query "${f}" --values "${absent[@]}" --format "${format}" -i "${p}" >"${tmp}/values" ||
        [[ $? -eq 1 ]]
      [[ $(wc -l <"${tmp}/values") -eq $(wc -l <"${p}") ]] || {
        echo "make_corpus.sh: ${file}: not one answer per probe" >&2
        return 1
      }
      awk -F'\t' '{ print $NF }' "${tmp}/values"
      ;;
    set-bytes | set-u64)
      local group
      cut -f1 "${p}" | awk '!seen[$0]++' >"${tmp}/groups"
      while IFS= read -r group; do
        awk -F'\t' -v g="${group}" '$1 == g { print substr($0, length(g) + 2) }' "${p}" >"${tmp}/keys"
        "${ribbon}" query "${f}" --group "${group}" --format "${format}" -i "${tmp}/keys" |
          awk -v g="${group}" '{ print g "\t" $0 }' >>"${tmp}/positive" || [[ ${PIPESTATUS[0]} -eq 1 ]]
      done <"${tmp}/groups"
      awk 'NR == FNR { hit[$0] = 1; next } { print (($0 in hit) ? 1 : 0) }' "${tmp}/positive" "${p}"
      ;;
    *)
      echo "make_corpus.sh: ${file}: unknown kind ${e_kind}" >&2
      return 1
      ;;
  esac
}

add_new() {
  local ribbon=$1 file
  shift
  for file in "$@"; do
    entry "${file}"
    local info="${file%.rbn}.info.json"
    for path in "${e_answers}" "${info}"; do
      [[ ! -e ${CORPUS}/${path} ]] || {
        echo "make_corpus.sh: ${path} exists: the corpus's files are never replaced" >&2
        return 1
      }
    done
    # A file copied in by hand (a golden file of an older version, kept as it was written)
    # must be there; one with a command is built here, or, copied in, must be what it builds.
    if [[ ${e_command} == "-" ]]; then
      [[ -e ${CORPUS}/${file} ]] || {
        echo "make_corpus.sh: ${file} has no command: copy it into the corpus first" >&2
        return 1
      }
    elif [[ -e ${CORPUS}/${file} ]]; then
      scratch_dir
      local scratch=${SCRATCH_DIRS[-1]}
      build_into "${ribbon}" "${file}" "${scratch}"
      cmp "${scratch}/${file}" "${CORPUS}/${file}" || {
        echo "make_corpus.sh: ${file} exists and its command writes other bytes" >&2
        return 1
      }
    else
      build_into "${ribbon}" "${file}" "${CORPUS}"
    fi
    mkdir -p "$(dirname "${CORPUS}/${e_answers}")"
    answers "${ribbon}" "${file}" >"${CORPUS}/${e_answers}"
    (cd "${CORPUS}" && "${ribbon}" info --json "${file}") >"${CORPUS}/${info}"
    (cd "${CORPUS}" && sha256sum "${file}" "${e_answers}" "${info}") >>"${CORPUS}/SHA256SUMS"
    echo "added ${file} (format version $(grep -o '"format_version": [0-9]*' "${CORPUS}/${info}" | cut -d' ' -f2))"
  done
}

if [[ $# -eq 3 && $1 == --answers ]]; then
  answers "$(realpath "$2")" "$3"
elif [[ $# -eq 2 && $1 == --inputs ]]; then
  write_inputs "$2"
elif [[ $# -ge 3 && $1 == --new ]]; then
  ribbon=$(realpath "$2")
  shift 2
  add_new "${ribbon}" "$@"
elif [[ $# -ge 2 && $1 != -* ]]; then
  ribbon=$(realpath "$1")
  mkdir -p "$2"
  out=$(cd "$2" && pwd)
  [[ ${out} != "${CORPUS}" ]] || {
    echo "make_corpus.sh: OUT_DIR is the corpus; new entries: make_corpus.sh --new" >&2
    exit 2
  }
  shift 2
  files=("$@")
  if [[ ${#files[@]} -eq 0 ]]; then
    mapfile -t files < <(manifest_entries | awk -F'\t' '$8 != "-" { print $1 }')
  fi
  for file in "${files[@]}"; do build_into "${ribbon}" "${file}" "${out}"; done
else
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' >&2
  exit 2
fi
