#!/usr/bin/env bash
# Seed corpora of the fuzz targets: filter files (tests/data and small files of every variant
# built by the ribbon tool) for fuzz_file_reader, and key texts for fuzz_key_parsers (the first
# byte picks the parser, see fuzz_key_parsers.cpp).
# Usage: make_corpus.sh RIBBON_BINARY OUT_DIR   (writes OUT_DIR/file_reader, OUT_DIR/key_parsers)
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 RIBBON_BINARY OUT_DIR" >&2
  exit 2
fi
ribbon=$1
out=$2
data="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)"
mkdir -p "${out}/file_reader" "${out}/key_parsers" "${out}/keys"
keys=${out}/keys

# Filter files: every variant, width and key kind, a few keys each (small inputs fuzz fastest).
cp "${data}"/*.rbn "${out}/file_reader/"
seq -f 'key-%.0f' 1 200 >"${keys}/lines.txt"
seq 1 200 | awk '{ printf "%x\n", $1 * 2654435761 }' >"${keys}/keys.hex"
seq 1 200 | awk '{ printf "k%d\t%d\n", $1, $1 % 5 }' >"${keys}/values.tsv"
build() {
  local name=$1
  shift
  "${ribbon}" build -q -o "${out}/file_reader/${name}.rbn" "$@"
}
build bumped -i "${keys}/lines.txt"
build bumped-w32-r1 -i "${keys}/lines.txt" -w 32 -r 1
build bumped-w128-hex -i "${keys}/keys.hex" --format hex64 -w 128 -r 16
build fractional -i "${keys}/lines.txt" --fpr 0.01
build small-shards -i "${keys}/lines.txt" --shard-size 4096 -w 32
build standard -i "${keys}/lines.txt" --variant standard
build homogeneous -i "${keys}/lines.txt" --variant homogeneous -r 4
build retrieval -i "${keys}/values.tsv" --values
build standard-retrieval -i "${keys}/values.tsv" --values --variant standard
build check-bits -i "${keys}/values.tsv" --values --check-bits 5 -w 32
build empty -i /dev/null
seq 1 200 | awk '{ printf "part-%d\tk%d\n", $1 % 3, $1 }' >"${keys}/pairs.tsv"
build set --groups -i "${keys}/pairs.tsv"  # a filter set with its groups' names (version 7)
build set-v6 --groups --no-group-names -i "${keys}/pairs.tsv"  # without them (version 6)
build set-standard --groups --layout standard -i "${keys}/pairs.tsv"  # version 7, standard layout
printf '{"table": "t", "files": [1, 2]}' >"${keys}/metadata.json"
build metadata -i "${keys}/lines.txt" -r 7 --metadata "${keys}/metadata.json"  # version 7, compact
build metadata-standard -i "${keys}/lines.txt" --layout standard --metadata "${keys}/metadata.json"

# Key texts, one file per parser.
printf '\000key\nother key\r\n\nlast' >"${out}/key_parsers/lines-hashes"
printf '\001a\nbb\r\n\n' >"${out}/key_parsers/lines-keys"
printf '\0021f\n0xABCDEF\r\n0Xffffffffffffffff\n' >"${out}/key_parsers/hex64-hashes"
printf '\003ff\n0x10\n0123456789abcdef\n' >"${out}/key_parsers/hex64-keys"
printf '\004abcdefgh12345678' >"${out}/key_parsers/u64"
printf '\005key\t1\nk2\t0x10\r\na\tb\t4294967295\n' >"${out}/key_parsers/key-values"
printf '\006ff\t1\n0x1\t0XFF\n' >"${out}/key_parsers/hex64-key-values"
printf '\00718446744073709551615' >"${out}/key_parsers/one-key"
rm -r "${keys}"
