package dev.ribbon;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Test files of any version and layout, written from docs/format.md alone (sections 2 to 5, 10
 * and 12): the parts of a file (header fields, layers with their section bytes, trailing
 * payloads) taken from a standard-layout file ({@link #fromStandard}) or built here ({@link
 * #tinySet}: a filter set of a few pairs, one plain layer solved by Gaussian elimination), then
 * written in the standard or the compact layout with any version and features word, checksums
 * recomputed. Fields are public to the tests, which break one rule at a time.
 */
final class FileBuilder {
    int variant, keyKind, width, resultBits, bucketSize, light, heavy, encoding, fraction, checkBits, groupKind;
    long shardSize, seed, keyCount, groupCount;
    final List<LayerPart> layers = new ArrayList<>();
    /** Trailing payloads, written where not null (whatever the features word says). */
    byte[] names, metadata;
    /** Non-zero: a byte written into the gap before the first trailing section (a test breaks the zero rule). */
    byte gapByte;

    static final class LayerPart {
        long numStarts, salt, inputKeys, bumpedKeys;
        int shardBits, kind;
        byte[] threshold, solution;
    }

    /** The parts of a standard-layout file (versions 1 to 4 and 6). */
    static FileBuilder fromStandard(byte[] file) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        FileBuilder p = new FileBuilder();
        p.variant = b.getInt(24);
        p.keyKind = b.getInt(28);
        p.width = b.getInt(32);
        p.resultBits = b.getInt(36);
        p.bucketSize = b.getInt(40);
        p.light = b.getInt(44);
        p.heavy = b.getInt(48);
        p.encoding = b.getInt(52);
        p.shardSize = b.getLong(56);
        p.seed = b.getLong(64);
        p.keyCount = b.getLong(72);
        p.fraction = b.getInt(96);
        p.checkBits = b.getInt(100);
        p.groupCount = b.getLong(104);
        p.groupKind = b.getInt(112);
        int n = b.getInt(80);
        for (int l = 0; l < n; l++) {
            int d = 128 + 128 * l;
            LayerPart layer = new LayerPart();
            layer.numStarts = b.getLong(d);
            layer.shardBits = b.getInt(d + 8);
            layer.kind = b.getInt(d + 12);
            layer.salt = b.getLong(d + 16);
            layer.inputKeys = b.getLong(d + 24);
            layer.bumpedKeys = b.getLong(d + 32);
            layer.threshold = Arrays.copyOfRange(file, (int) b.getLong(d + 40), (int) (b.getLong(d + 40) + b.getLong(d + 48)));
            layer.solution = Arrays.copyOfRange(file, (int) b.getLong(d + 64), (int) (b.getLong(d + 64) + b.getLong(d + 72)));
            p.layers.add(layer);
        }
        return p;
    }

    /** The features the parts describe (section 12), the compact bit as given. */
    int features(boolean compact) {
        return (compact ? VersionRules.COMPACT : 0) | (encoding == 2 ? VersionRules.ONE_PLUS_BIT_CODES : 0)
                | (checkBits != 0 ? VersionRules.CHECK_BITS : 0) | (groupKind != 0 ? VersionRules.FILTER_SET : 0)
                | (names != null ? VersionRules.GROUP_NAMES : 0) | (metadata != null ? VersionRules.METADATA : 0);
    }

    /** The standard layout, version 7 with the features the parts describe. */
    byte[] standard7() {
        return standard(7, features(false));
    }

    /** The compact layout, version 7 with the features the parts describe. */
    byte[] compact7() {
        return compact(7, features(true));
    }

    /** The standard layout (section 2 to 5) with this version and, in version 7, features word. */
    byte[] standard(int version, int features) {
        int n = layers.size();
        long[][] offsets = layOut(128 + 128 * n, 64);
        ByteBuffer out = ByteBuffer.allocate((int) offsets[n][0]).order(ByteOrder.LITTLE_ENDIAN);
        out.put("RIBBONFL".getBytes(StandardCharsets.US_ASCII));
        out.putInt(8, version);
        out.putInt(12, version == 7 ? features : 128);
        out.putLong(16, out.capacity());
        out.putInt(24, variant).putInt(28, keyKind).putInt(32, width).putInt(36, resultBits);
        out.putInt(40, bucketSize).putInt(44, light).putInt(48, heavy).putInt(52, encoding);
        out.putLong(56, shardSize).putLong(64, seed).putLong(72, keyCount);
        out.putInt(80, n).putInt(84, 128);
        out.putInt(96, fraction).putInt(100, checkBits).putLong(104, groupCount).putInt(112, groupKind);
        for (int l = 0; l < n; l++) {
            LayerPart layer = layers.get(l);
            int d = 128 + 128 * l;
            out.putLong(d, layer.numStarts).putInt(d + 8, layer.shardBits).putInt(d + 12, layer.kind);
            out.putLong(d + 16, layer.salt).putLong(d + 24, layer.inputKeys).putLong(d + 32, layer.bumpedKeys);
            out.putLong(d + 40, layer.threshold.length == 0 ? 0 : offsets[l][0]).putLong(d + 48, layer.threshold.length);
            out.putLong(d + 56, xxh64(layer.threshold));
            out.putLong(d + 64, offsets[l][1]).putLong(d + 72, layer.solution.length).putLong(d + 80, xxh64(layer.solution));
            // Version 1 keeps it 0; the others state the value of section 3.
            long numBlocks = layer.numStarts / width + 1;
            out.putLong(d + 88, version == 1 ? 0 : numBlocks - numBlocks * fraction / 65536);
        }
        byte[] bytes = out.array();
        writeSections(bytes, offsets);
        out.putLong(88, Hashing.XXH64.hash(bytes, 128, 128 * n, 0));
        out.putLong(120, Hashing.XXH64.hash(bytes, 0, 120, 0));
        return bytes;
    }

    /** The compact layout: version 5 (section 10) or 7 (section 12), with this features word (7). */
    byte[] compact(int version, int features) {
        int n = layers.size();
        int headerBytes = version == 5 ? 56 : 72;
        long[][] offsets = layOut(headerBytes + 24 * n, 16);
        ByteBuffer out = ByteBuffer.allocate((int) offsets[n][0]).order(ByteOrder.LITTLE_ENDIAN);
        out.put("RIBBONFL".getBytes(StandardCharsets.US_ASCII));
        out.putInt(8, version);
        int checksumAt;
        if (version == 5) {
            out.put(12, (byte) variant).put(13, (byte) keyKind).put(14, (byte) width).put(15, (byte) resultBits);
            out.putLong(16, seed).putLong(24, keyCount);
            out.putInt(40, light).putInt(44, heavy).putShort(48, (short) fraction).put(50, (byte) checkBits);
            out.put(51, (byte) Long.numberOfTrailingZeros(bucketSize)).put(52, (byte) Long.numberOfTrailingZeros(shardSize));
            out.put(53, (byte) encoding).put(54, (byte) n);
            checksumAt = 32;
        } else {
            out.putInt(12, features);
            out.put(16, (byte) variant).put(17, (byte) keyKind).put(18, (byte) width).put(19, (byte) resultBits);
            out.putInt(20, light).putLong(24, seed).putLong(32, keyCount);
            out.putInt(48, heavy).putShort(52, (short) fraction).put(54, (byte) checkBits);
            out.put(55, (byte) Long.numberOfTrailingZeros(bucketSize)).put(56, (byte) Long.numberOfTrailingZeros(shardSize));
            out.put(57, (byte) encoding).put(58, (byte) n).put(59, (byte) groupKind).putLong(64, groupCount);
            checksumAt = 40;
        }
        for (int l = 0; l < n; l++) {
            LayerPart layer = layers.get(l);
            int d = headerBytes + 24 * l;
            out.putLong(d, layer.salt).putLong(d + 8, layer.bumpedKeys).putInt(d + 16, (int) layer.numStarts);
            out.put(d + 20, (byte) layer.kind);
        }
        byte[] bytes = out.array();
        writeSections(bytes, offsets);
        ByteBuffer covered = ByteBuffer.allocate(headerBytes + 24 * n + 16 * n).order(ByteOrder.LITTLE_ENDIAN);
        covered.put(bytes, 0, headerBytes + 24 * n);
        for (LayerPart layer : layers) covered.putLong(xxh64(layer.threshold)).putLong(xxh64(layer.solution));
        out.putLong(checksumAt, Hashing.XXH64.hash(covered.array(), 0, covered.capacity(), 0));
        return bytes;
    }

    /** Offsets per layer {threshold, solution}, then {names frame, metadata frame}, then {end}. */
    private long[][] layOut(long offset, long alignment) {
        int n = layers.size();
        long[][] at = new long[n + 2][];
        for (int l = 0; l < n; l++) {
            LayerPart layer = layers.get(l);
            long threshold = 0;
            if (layer.threshold.length != 0) {
                threshold = alignUp(offset, alignment);
                offset = threshold + layer.threshold.length;
            }
            long solution = alignUp(offset, alignment);
            offset = solution + layer.solution.length;
            at[l] = new long[] {threshold, solution};
        }
        long[] frames = {-1, -1};
        byte[][] payloads = {names, metadata};
        for (int i = 0; i < 2; i++) {
            if (payloads[i] == null) continue;
            frames[i] = alignUp(offset, alignment);
            offset = frames[i] + 16 + payloads[i].length;
        }
        at[n] = new long[] {offset};
        at[n + 1] = frames;
        return at;
    }

    private void writeSections(byte[] bytes, long[][] offsets) {
        int n = layers.size();
        ByteBuffer out = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long end = 0;
        for (int l = 0; l < n; l++) {
            LayerPart layer = layers.get(l);
            System.arraycopy(layer.threshold, 0, bytes, (int) offsets[l][0], layer.threshold.length);
            System.arraycopy(layer.solution, 0, bytes, (int) offsets[l][1], layer.solution.length);
            end = offsets[l][1] + layer.solution.length;
        }
        byte[][] payloads = {names, metadata};
        long[] frames = offsets[n + 1];
        for (int i = 0; i < 2; i++) {
            if (payloads[i] == null) continue;
            int frame = (int) frames[i];
            if (gapByte != 0 && frame > end) {
                bytes[frame - 1] = gapByte;
                gapByte = 0;
            }
            out.putLong(frame, payloads[i].length).putLong(frame + 8, xxh64(payloads[i]));
            System.arraycopy(payloads[i], 0, bytes, frame + 16, payloads[i].length);
            end = frame + 16 + payloads[i].length;
        }
    }

    static long alignUp(long x, long alignment) {
        return (x + alignment - 1) / alignment * alignment;
    }

    static long xxh64(byte[] bytes) {
        return Hashing.XXH64.hash(bytes, 0, bytes.length, 0);
    }

    // --- group-names payloads (section 12), canonical ---

    static void varint(ByteArrayOutputStream out, long v) {
        while (Long.compareUnsigned(v, 0x80) >= 0) {
            out.write((int) (v & 0x7F) | 0x80);
            v >>>= 7;
        }
        out.write((int) v);
    }

    /** Integer names (ascending). */
    static byte[] namesPayload(long... names) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(le64(names.length));
        for (int i = 0; i < names.length; i++) varint(out, i == 0 ? names[0] : names[i] - names[i - 1]);
        return out.toByteArray();
    }

    /** Byte-string names (ascending, unsigned). */
    static byte[] namesPayload(byte[]... names) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(le64(names.length));
        byte[] previous = new byte[0];
        for (byte[] name : names) {
            int shared = 0;
            while (shared < previous.length && shared < name.length && previous[shared] == name[shared]) shared++;
            varint(out, shared);
            varint(out, name.length - shared);
            out.write(name, shared, name.length - shared);
            previous = name;
        }
        return out.toByteArray();
    }

    static byte[] le64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    /** Bytes, for payloads written by hand. */
    static byte[] bytes(int... values) {
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) out[i] = (byte) values[i];
        return out;
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) out.writeBytes(part);
        return out.toByteArray();
    }

    // --- a tiny filter set: one plain layer (variant 1, w = 64, r = 16) solved exactly ---

    static final int TINY_R = 16;

    /**
     * A filter set (version-6 parts: groupKind 1 or 2, no names) of the (group, key) pairs given
     * as their hashes: a standard-Ribbon filter (variant 1) of one plain layer of 64 starts,
     * solved by Gaussian elimination over GF(2). Throws if the rows happen to be dependent.
     */
    static FileBuilder tinySet(long seed, int keyKind, int groupKind, long groupCount, long[] pairHashes) {
        FileBuilder p = new FileBuilder();
        p.variant = 1;
        p.keyKind = keyKind;
        p.width = 64;
        p.resultBits = TINY_R;
        p.bucketSize = 64;
        p.light = 1;
        p.heavy = 2;
        p.encoding = 1;
        p.shardSize = 2048;
        p.seed = seed;
        p.keyCount = pairHashes.length;
        p.groupKind = groupKind;
        p.groupCount = groupCount;
        LayerPart layer = new LayerPart();
        layer.numStarts = 64;
        layer.shardBits = 63;
        layer.kind = Layer.KIND_PLAIN;
        layer.inputKeys = pairHashes.length;
        layer.threshold = new byte[0];
        layer.solution = solve(pairHashes);
        p.layers.add(layer);
        return p;
    }

    /** The solution (2 blocks of r words of 64 bits) giving each hash its fingerprint. */
    private static byte[] solve(long[] hashes) {
        long[] pivotLo = new long[128], pivotHi = new long[128];
        int[] pivotRhs = new int[128];
        boolean[] has = new boolean[128];
        for (long x : hashes) {
            int s = (int) Hashing.unsignedMultiplyHigh(x, 64);
            long c = (x * Rows.COEFFICIENT_MULTIPLIER) | 1;
            long lo = c << s, hi = s == 0 ? 0 : c >>> (64 - s);
            int rhs = Rows.fingerprint(x, TINY_R);
            while (lo != 0 || hi != 0) {
                int col = lo != 0 ? Long.numberOfTrailingZeros(lo) : 64 + Long.numberOfTrailingZeros(hi);
                if (!has[col]) {
                    has[col] = true;
                    pivotLo[col] = lo;
                    pivotHi[col] = hi;
                    pivotRhs[col] = rhs;
                    break;
                }
                lo ^= pivotLo[col];
                hi ^= pivotHi[col];
                rhs ^= pivotRhs[col];
            }
            if (lo == 0 && hi == 0 && rhs != 0) throw new IllegalStateException("dependent rows: pick another seed");
        }
        int[] z = new int[128];
        for (int col = 127; col >= 0; col--) {
            if (!has[col]) continue;
            int v = pivotRhs[col];
            for (int q = col + 1; q < 128; q++) {
                boolean set = q < 64 ? (pivotLo[col] >>> q & 1) != 0 : (pivotHi[col] >>> (q - 64) & 1) != 0;
                if (set) v ^= z[q];
            }
            z[col] = v;
        }
        ByteBuffer out = ByteBuffer.allocate(2 * TINY_R * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < 2; b++) {
            for (int j = 0; j < TINY_R; j++) {
                long word = 0;
                for (int i = 0; i < 64; i++) word |= (long) (z[b * 64 + i] >>> j & 1) << i;
                out.putLong((b * TINY_R + j) * 8, word);
            }
        }
        return out.array();
    }
}
