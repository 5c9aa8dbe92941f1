#!/usr/bin/env bash
# The Java reader's answers against the C++ reader's: files of every variant, width, threshold
# encoding (format versions 2 and 3), layout (the compact one of version 5 and the standard
# one), fractional setting and key kind, and filter sets (version 7 with group names in either
# layout, asked --group and --groups-of; version 6 without), built by `ribbon build`,
# and the version-1 golden files of tests/data, each queried with members and random
# non-members by `ribbon query` and `java -jar ribbon.jar query`: output and exit status must
# be identical (so the false positives are the same keys too).
# Usage: compare_answers.sh RIBBON_CLI JAVA RIBBON_JAR
set -euo pipefail
ribbon=$(realpath "$1")
java=$2
jar=$(realpath "$3")
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
cd "${tmp}"

# Keys: 30000 text members (some with \r, tabs, spaces, empty, non-ASCII bytes), 30000 text
# probes that are not members, integer members and probes as u64 and hex64.
python3 - <<'PY'
import random, struct
rng = random.Random(24)
def text(i):
    return b"k%d-%x" % (i, rng.getrandbits(40)) + bytes(rng.choice([b"", b" x", b"\xc3\xa9", b"\t1", b"\xff", b"\r"]))
members = list(dict.fromkeys(text(i) for i in range(30000))) + [b""]
others = [b"other-%d-%x" % (i, rng.getrandbits(32)) for i in range(30000)]
open("lines.txt", "wb").write(b"\n".join(members) + b"\n")
probes = members[::3] + others
rng.shuffle(probes)
open("lines-probes.txt", "wb").write(b"\n".join(probes) + b"\n")
ints = list({rng.getrandbits(64) for _ in range(30000)}) + [0, 2**64 - 1]
open("keys.u64", "wb").write(b"".join(struct.pack("<Q", k) for k in ints))
iprobes = ints[::3] + [rng.getrandbits(64) for _ in range(30000)]
rng.shuffle(iprobes)
open("probes.u64", "wb").write(b"".join(struct.pack("<Q", k) for k in iprobes))
open("probes.hex", "w").write("".join("%x\n" % k if k % 2 else "0X%X\r\n" % k for k in iprobes))
open("values.tsv", "wb").write(b"".join(b"%s\t%d\n" % (k.replace(b"\t", b" "), rng.getrandbits(32)) for k in members[:20000]))
open("values-probes.txt", "wb").write(b"\n".join(k.replace(b"\t", b" ") for k in members[:20000:2] + others[:5000]) + b"\n")
open("smallvalues.tsv", "wb").write(b"".join(b"%s\t%d\n" % (k.replace(b"\t", b" "), rng.getrandbits(14)) for k in members[:20000]))
open("hexvalues.tsv", "w").write("".join("%x\t%d\n" % (k, k % 4096) for k in ints[:20000]))
PY

failures=0
checked=0
# compare NAME FILE QUERY-ARGS...: both readers, same stdout and exit status.
compare() {
  local name=$1 file=$2
  shift 2
  local c_rc=0 j_rc=0
  "${ribbon}" query "${file}" "$@" >c.out 2>c.err || c_rc=$?
  "${java}" -jar "${jar}" query "${file}" "$@" >j.out 2>j.err || j_rc=$?
  checked=$((checked + 1))
  if [[ ${c_rc} -ne ${j_rc} ]] || ! cmp -s c.out j.out; then
    echo "MISMATCH ${name} ($*): exit ${c_rc} vs ${j_rc}, $(wc -l <c.out) vs $(wc -l <j.out) lines"
    head -3 c.err j.err
    failures=$((failures + 1))
  elif [[ ${c_rc} -eq 2 ]]; then
    echo "ERROR in both readers for ${name}: $(cat c.err)"
    failures=$((failures + 1))
  else
    echo "ok ${name}: exit ${c_rc}, $(wc -l <c.out) lines"
  fi
}

# Filters from text keys: every variant, width, encoding, fractional setting; small shards so
# that layers have many shards and the 1+-bit regions a short last shard.
for w in 32 64 128; do
  shard=$((w == 32 ? 1024 : w == 64 ? 4096 : 16384))
  for variant in bumped standard homogeneous; do
    for bits in "-r 7" "--fpr 0.003" "-r 1" "-r 32"; do
      [[ ${variant} == homogeneous && ${bits} == "-r 32" ]] && continue
      codes_list="1+-bit"
      [[ ${variant} == bumped ]] && codes_list="1+-bit 2-bit"
      for codes in ${codes_list}; do
        layout=compact
        [[ ${codes} == 2-bit || ${bits} == "-r 7" ]] && layout=standard
        name="lines-w${w}-${variant}-${bits// /}-${codes}-${layout}"
        "${ribbon}" build -q -i lines.txt -o f.rbn -w "${w}" --variant "${variant}" ${bits} \
          --threshold-codes "${codes}" --shard-size "${shard}" --seed $((w * 7 + ${#variant})) \
          --layout "${layout}"
        compare "${name}" f.rbn -i lines-probes.txt
      done
    done
  done
done
compare "lines-count" f.rbn --count -i lines-probes.txt
# (Argument keys in ASCII: a JVM decodes arguments in the platform charset, losing other bytes.)
compare "lines-arguments" f.rbn -- "$(grep -a -m1 '^k[0-9]*-[0-9a-f]* x$' lines.txt)" nothing -x

# Filters from integer keys, queried as u64 and as hex64.
for w in 32 64 128; do
  for variant in bumped standard homogeneous; do
    "${ribbon}" build -q -i keys.u64 --format u64 -o f.rbn -w "${w}" --variant "${variant}" --fpr 0.02 \
      --layout "$([[ ${w} == 128 ]] && echo standard || echo auto)"
    compare "u64-w${w}-${variant}" f.rbn --format u64 -i probes.u64
    compare "hex64-w${w}-${variant}" f.rbn --format hex64 -i probes.hex
  done
done
"${ribbon}" build -q -i keys.u64 --format u64 -o f.rbn --threshold-codes 2-bit -r 16 --seed 99
compare "u64-2bit-r16" f.rbn --format u64 -i probes.u64
compare "u64-arguments" f.rbn --format u64 0 18446744073709551615 12345
# The defaults (w = 64, r = 8, 1+-bit codes): the reader's unrolled r = 8 row (Query64).
"${ribbon}" build -q -i keys.u64 --format u64 -o f.rbn --shard-size 4096
compare "u64-defaults-r8" f.rbn --format u64 -i probes.u64
"${ribbon}" build -q -i lines.txt -o f.rbn -r 8
compare "lines-defaults-r8" f.rbn -i lines-probes.txt

# Retrieval structures: bumped and standard, every width, text and hex64 keys.
for w in 32 64 128; do
  for variant in retrieval standard-retrieval; do
    "${ribbon}" build -q --values -i values.tsv -o f.rbn -w "${w}" --variant "${variant}" \
      --layout "$([[ ${w} == 64 ]] && echo standard || echo auto)"
    compare "values-w${w}-${variant}" f.rbn --values -i values-probes.txt
    "${ribbon}" build -q --values -i hexvalues.tsv --format hex64 -o f.rbn -w "${w}" --variant "${variant}"
    compare "hexvalues-w${w}-${variant}" f.rbn --values --format hex64 -i probes.hex
  done
done

# Check bits (format version 4): found keys only, --absent, membership; text and hex64 keys.
for w in 32 64 128; do
  "${ribbon}" build -q --values -i smallvalues.tsv -o f.rbn -w "${w}" --check-bits 9 \
    --layout "$([[ ${w} == 32 ]] && echo standard || echo auto)"
  compare "checked-w${w}" f.rbn --values -i values-probes.txt
  compare "checked-absent-w${w}" f.rbn --values --absent none -i values-probes.txt
  compare "checked-membership-w${w}" f.rbn -i values-probes.txt
  "${ribbon}" build -q --values -i hexvalues.tsv --format hex64 -o f.rbn -w "${w}" --check-bits 3
  compare "checked-hex-w${w}" f.rbn --values --format hex64 -i probes.hex
done

# The golden files of format version 1.
golden="${here}/../../tests/data"
compare "golden-v1-lines" "${golden}/v1_lines_3000.rbn" -i lines-probes.txt
seq 1 6000 >golden-probes.txt  # members: 1 to 3000
compare "golden-v1-lines-keys" "${golden}/v1_lines_3000.rbn" -i golden-probes.txt
compare "golden-v1-u64" "${golden}/v1_u64_5000_w128_r13.rbn" --format u64 -i probes.u64
python3 -c 'print("".join("%x\n" % (i * 0x9E3779B97F4A7C15 % 2**64) for i in range(10000)), end="")' >golden-probes.hex
compare "golden-v1-hex" "${golden}/v1_u64_5000_w128_r13.rbn" --format hex64 -i golden-probes.hex

# An input error part way: both exit 2 with the same output, the answers of the chunks before
# the one that holds the error (small chunks, so that there are many).
# compare_failing NAME FILE QUERY-ARGS...
compare_failing() {
  local name=$1 file=$2
  shift 2
  local c_rc=0 j_rc=0
  RIBBON_CLI_CHUNK_BYTES=4000 "${ribbon}" query "${file}" "$@" >c.out 2>c.err || c_rc=$?
  RIBBON_CLI_CHUNK_BYTES=4000 "${java}" -jar "${jar}" query "${file}" "$@" >j.out 2>j.err || j_rc=$?
  checked=$((checked + 1))
  if [[ ${c_rc} -ne 2 || ${j_rc} -ne 2 ]] || ! cmp -s c.out j.out || [[ ! -s c.out ]]; then
    echo "MISMATCH ${name} ($*): exit ${c_rc} vs ${j_rc}, $(wc -l <c.out) vs $(wc -l <j.out) lines"
    head -3 c.err j.err
    failures=$((failures + 1))
  else
    echo "ok ${name}: exit 2 in both after the same $(wc -l <c.out) lines: $(cat j.err)"
  fi
}
"${ribbon}" build -q -i keys.u64 --format u64 -o f.rbn --fpr 0.02
{ head -n 20000 probes.hex; echo "12345678901234567"; tail -n 100 probes.hex; } >bad.hex
compare_failing "hex64-bad-line" f.rbn --format hex64 -i probes.hex -i bad.hex
{ head -c 80000 probes.u64; printf 'abc'; } >bad.u64
compare_failing "u64-trailing-bytes" f.rbn --format u64 -i bad.u64
compare_failing "missing-second-input" f.rbn --format hex64 12345 "$(head -n 1 probes.hex)" -i probes.hex -i missing.hex

# Filter sets (version 7 with names, compact and standard; version 6 without): (group, key)
# pairs of text lines and of integers, each queried in a group that holds some of the probes
# and in one that was never given, and for the groups of every probe (--groups-of).
python3 - <<'PY'
import struct
lines = open("lines.txt", "rb").read().split(b"\n")[:-1]
open("pairs.tsv", "wb").write(b"".join(b"part-%d\t%s\n" % (i % 5, k) for i, k in enumerate(lines) if b"\t" not in k))
ints = struct.unpack("<%dQ" % (len(open("keys.u64", "rb").read()) // 8), open("keys.u64", "rb").read())
open("pairs.u64", "wb").write(b"".join(struct.pack("<QQ", i % 5, k) for i, k in enumerate(ints)))
PY
set_layouts=(--no-group-names "--layout compact" "--layout standard")
for w in 32 64 128; do
  layout=${set_layouts[$(( (w / 32 - 1) % 3 ))]}
  "${ribbon}" build -q --groups -i pairs.tsv -o f.rbn -w "${w}" --seed "${w}" ${layout}
  for group in part-2 part-9; do compare "set-lines-w${w}-${group}" f.rbn --group "${group}" -i lines-probes.txt; done
  [[ ${layout} == --no-group-names ]] || compare "set-lines-w${w}-groups-of" f.rbn --groups-of -i lines-probes.txt
  "${ribbon}" build -q --groups --format u64 -i pairs.u64 -o f.rbn -w "${w}" -r 6 ${layout}
  for group in 3 18446744073709551615; do
    compare "set-u64-w${w}-${group}" f.rbn --group "${group}" --format u64 -i probes.u64
  done
  [[ ${layout} == --no-group-names ]] || compare "set-u64-w${w}-groups-of" f.rbn --groups-of --format u64 -i probes.u64
done
for args in "--format u64 -i probes.u64" "--group x --format u64 -i probes.u64"; do  # no group; a text one
  c_rc=0 j_rc=0
  "${ribbon}" query f.rbn ${args} >/dev/null 2>&1 || c_rc=$?
  "${java}" -jar "${jar}" query f.rbn ${args} >/dev/null 2>&1 || j_rc=$?
  checked=$((checked + 1))
  [[ ${c_rc} -eq 2 && ${j_rc} -eq 2 ]] || { echo "MISMATCH set refusal (${args}): ${c_rc} vs ${j_rc}"; failures=$((failures + 1)); }
done

# Refusals: wrong key kind, --values on a filter, a missing file (exit 2 in both).
for args in "--format u64 -i probes.u64" "--values -i lines-probes.txt"; do
  c_rc=0 j_rc=0
  "${ribbon}" query "${golden}/v1_lines_3000.rbn" ${args} >/dev/null 2>&1 || c_rc=$?
  "${java}" -jar "${jar}" query "${golden}/v1_lines_3000.rbn" ${args} >/dev/null 2>&1 || j_rc=$?
  checked=$((checked + 1))
  [[ ${c_rc} -eq 2 && ${j_rc} -eq 2 ]] || { echo "MISMATCH refusal (${args}): ${c_rc} vs ${j_rc}"; failures=$((failures + 1)); }
done

echo "${checked} comparisons, ${failures} failed"
[[ ${failures} -eq 0 ]]
