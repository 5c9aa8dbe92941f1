package dev.ribbon;

/**
 * The query of a w = 64 file whose layer-0 blocks all hold r words (no fractional bits) and
 * which is mapped in one window, with everything that does not depend on the key worked out
 * at open (as the C++ query plan does): layer 0's solution ({@link Words}: a heap copy where
 * the heap can spare it, else the mapped buffer), its bucket codes as 2-bit codes in an array
 * (1+-bit codes decoded: one word read decides a key), its bump rule, r, and what a result is
 * compared with. Layer 0 answers most keys in a short path that the JIT inlines into the
 * caller's loop; keys it bumps go to {@link Layer}'s general code.
 */
final class Query64 {
    private static final int NO_RULE = 0;
    private static final int SHARD_HEADS = 1;
    /** Thresholds from 2-bit codes: a 2-bit file's, or a 1+-bit file's decoded at open. */
    private static final int TWO_BIT = 2;

    /** Keys whose layer-0 reads are issued before the first of them is answered. */
    static final int BLOCK = 64;

    private final Layer[] layers;
    private final Words solution;
    /** Layer 0's bucket codes, 2 bits each (null without thresholds). */
    private final long[] codes;
    private final long numStarts;
    private final long salt;
    private final long shardMask;
    private final int rule;
    private final int bucketBits;
    private final int bucketMask;
    private final int cut1;
    private final int cut2;
    private final int cut3;
    private final int bits;
    /** The fingerprint mask: 0 in homogeneous filters (rows solved for 0), else all ones. */
    private final int rhsMask;

    private Query64(FilterParams p, Layer[] layers, MappedFile file, long heapBytes) {
        this.layers = layers;
        Layer first = layers[0];
        this.solution = Words.of(file.words(first.solutionOffset, first.solutionBytes()), heapBytes);
        this.codes = first.kind == Layer.KIND_BUMPED ? twoBitCodes(p, first, file) : null;
        this.numStarts = first.numStarts;
        this.salt = first.salt;
        this.shardMask = first.kind == Layer.KIND_PLAIN ? -1L >>> 1 : (1L << first.shardBits) - 1;
        this.rule = first.kind == Layer.KIND_PLAIN ? NO_RULE : first.kind == Layer.KIND_STANDARD
                ? SHARD_HEADS : TWO_BIT;
        this.bucketBits = Integer.numberOfTrailingZeros(p.bucketSize);
        this.bucketMask = p.bucketSize - 1;
        this.cut1 = p.threshold(1);
        this.cut2 = p.threshold(2);
        this.cut3 = p.threshold(3);
        this.bits = p.resultBits;
        this.rhsMask = p.variant == Variant.HOMOGENEOUS ? 0 : -1;
    }

    /**
     * The plan of a file it fits (see the class comment), else null; layer 0's solution is
     * copied into the heap if it takes at most {@code heapBytes} bytes ({@link Words}).
     */
    static Query64 of(FilterParams p, Layer[] layers, MappedFile file, long heapBytes) {
        if (p.width != 64 || p.extraBitFraction != 0 || layers.length == 0 || !file.isSingleWindow()) {
            return null;
        }
        return new Query64(p, layers, file, heapBytes);
    }

    /** Layer 0's codes as 2-bit codes: a copy of a 2-bit file's, or the 1+-bit codes decoded. */
    private static long[] twoBitCodes(FilterParams p, Layer first, MappedFile file) {
        if (!p.twoBitCodes) return first.regions.decodeToTwoBit(file, first.thresholdOffset, first.numBuckets());
        long[] words = new long[Math.toIntExact(first.thresholdBytes() / 8)];
        file.words(first.thresholdOffset, first.thresholdBytes()).get(words);
        return words;
    }

    /** The start of layer 0's hash of a key hash. */
    private long start(long hash) {
        return Hashing.unsignedMultiplyHigh(hash, numStarts);
    }

    private long layer0Hash(long keyHash) {
        return salt != 0 ? Hashing.remix(keyHash, salt) : keyHash;
    }

    /** Index of the code word of the bucket of `start`. */
    private int codeWord(long start) {
        return (int) (start >>> bucketBits >>> 5);
    }

    /** Does layer 0 pass the key at `start` on to the next layer? */
    private boolean bumps(long start) {
        if (start > shardMask && (start & shardMask) < 64) return true;  // a shard's head
        if (rule <= SHARD_HEADS) return false;
        long bucket = start >>> bucketBits;
        int code = (int) (codes[codeWord(start)] >>> (2 * (bucket & 31))) & 3;
        int offset = (int) start & bucketMask;
        return offset < (code == 0 ? 0 : code == 1 ? cut1 : code == 2 ? cut2 : cut3);
    }

    /** The r-bit result of the row at `start` in layer 0. */
    private int row(long start, long hash) {
        long coeff = (hash * Rows.COEFFICIENT_MULTIPLIER) | 1;
        int shift = (int) start & 63;
        long low = coeff << shift;
        long high = (coeff >>> 1) >>> (63 - shift);
        int r = bits;
        int at = (int) (start >>> 6) * r;
        if (r == 8) return row8(at, low, high);
        int result = 0;
        for (int j = 0; j < r; j++) {
            result |= (Long.bitCount((solution.get(at + j) & low) ^ (solution.get(at + r + j) & high)) & 1) << j;
        }
        return result;
    }

    /**
     * The row of r = 8 (the default) written out: reads at fixed distances from one index,
     * whose bounds checks the JIT merges into two, and no loop.
     */
    private int row8(int at, long low, long high) {
        Words s = solution;
        return parity(s.get(at) & low ^ s.get(at + 8) & high)
                | parity(s.get(at + 1) & low ^ s.get(at + 9) & high) << 1
                | parity(s.get(at + 2) & low ^ s.get(at + 10) & high) << 2
                | parity(s.get(at + 3) & low ^ s.get(at + 11) & high) << 3
                | parity(s.get(at + 4) & low ^ s.get(at + 12) & high) << 4
                | parity(s.get(at + 5) & low ^ s.get(at + 13) & high) << 5
                | parity(s.get(at + 6) & low ^ s.get(at + 14) & high) << 6
                | parity(s.get(at + 7) & low ^ s.get(at + 15) & high) << 7;
    }

    private static int parity(long x) {
        return Long.bitCount(x) & 1;
    }

    /** Membership of the key whose key hash is `keyHash`. */
    boolean contains(long keyHash) {
        long hash = layer0Hash(keyHash);
        long start = start(hash);
        if (bumps(start)) return containsFromLayer1(hash);
        return row(start, hash) == (Rows.fingerprint(hash, bits) & rhsMask);
    }

    /** The value stored for the key whose key hash is `keyHash` (retrieval). */
    int lookup(long keyHash) {
        long hash = layer0Hash(keyHash);
        long start = start(hash);
        if (bumps(start)) return lookupFromLayer1(hash);
        return row(start, hash);
    }

    /**
     * Membership of keyHashes[i] in found[from + i] for i below count (at most BLOCK): all keys'
     * threshold words are read first, then all their rows, then they are answered, so that the
     * cache misses of a block overlap instead of following each other.
     */
    void contains(long[] keyHashes, int count, boolean[] found, int from, long[] starts) {
        long touched = 0;
        for (int i = 0; i < count; i++) {
            long hash = layer0Hash(keyHashes[i]);
            keyHashes[i] = hash;
            long start = start(hash);
            starts[i] = start;
            if (rule > SHARD_HEADS) touched ^= codes[codeWord(start)];
        }
        for (int i = 0; i < count; i++) {
            long start = starts[i];
            if (bumps(start)) {
                starts[i] = -1;
            } else {
                int at = (int) (start >>> 6) * bits;
                touched ^= solution.get(at) ^ solution.get(at + bits);
            }
        }
        for (int i = 0; i < count; i++) {
            long hash = keyHashes[i];
            found[from + i] = starts[i] < 0 ? containsFromLayer1(hash)
                    : row(starts[i], hash) == (Rows.fingerprint(hash, bits) & rhsMask);
        }
        if (touched == 42) sink = touched;  // keeps the reads: their values are not needed
    }

    /** Keeps {@link #contains(long[], int, boolean[], int, long[])}'s reads from being removed. */
    @SuppressWarnings("unused")
    private static volatile long sink;

    /** Membership of a key that layer 0 (where its hash is `hash`) bumps. */
    private boolean containsFromLayer1(long hash) {
        return layers.length > 1 && Layer.contains(layers, 1, Hashing.remix(hash, layers[1].salt));
    }

    private int lookupFromLayer1(long hash) {
        return layers.length > 1 ? Layer.lookup(layers, 1, Hashing.remix(hash, layers[1].salt)) : 0;
    }
}
