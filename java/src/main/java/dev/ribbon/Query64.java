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
    /**
     * Layer 0's solution where it was copied into the heap, else null: the queries read this
     * array directly (one null test a query, then plain loads whose bounds checks the JIT
     * merges) rather than through {@link Words#get}, a call site that turns bimorphic, with a
     * type check per read, once a JVM has seen both kinds of {@link Words}.
     */
    private final long[] heap;
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
        this.heap = solution.array();
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
        // Hashing.unsignedMultiplyHigh, less its term for a negative numStarts (it is below 2^63).
        return Math.multiplyHigh(hash, numStarts) + ((hash >> 63) & numStarts);
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
        long[] h = heap;
        if (h != null) return r == 8 ? row8(h, at, low, high) : row(h, at, r, low, high);
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

    /** {@link #row8(int, long, long)} on the heap copy. */
    private static int row8(long[] s, int at, long low, long high) {
        return parity(s[at] & low ^ s[at + 8] & high)
                | parity(s[at + 1] & low ^ s[at + 9] & high) << 1
                | parity(s[at + 2] & low ^ s[at + 10] & high) << 2
                | parity(s[at + 3] & low ^ s[at + 11] & high) << 3
                | parity(s[at + 4] & low ^ s[at + 12] & high) << 4
                | parity(s[at + 5] & low ^ s[at + 13] & high) << 5
                | parity(s[at + 6] & low ^ s[at + 14] & high) << 6
                | parity(s[at + 7] & low ^ s[at + 15] & high) << 7;
    }

    /** The row of any r on the heap copy. */
    private static int row(long[] s, int at, int r, long low, long high) {
        int result = 0;
        for (int j = 0; j < r; j++) result |= parity(s[at + j] & low ^ s[at + r + j] & high) << j;
        return result;
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
     * threshold words and first row words are read first ({@link #touch}), then they are
     * answered, so that the cache misses of a block overlap instead of following each other.
     */
    void contains(long[] keyHashes, int count, boolean[] found, int from, long[] starts) {
        long touched = touch(keyHashes, count, starts);
        for (int i = 0; i < count; i++) {
            long hash = keyHashes[i];
            long start = starts[i];
            found[from + i] = bumps(start) ? containsFromLayer1(hash)
                    : row(start, hash) == (Rows.fingerprint(hash, bits) & rhsMask);
        }
        if (touched == 42) sink = touched;  // keeps the reads: their values are not needed
    }

    /**
     * The stored results of keyHashes[i] in out[from + i] for i below count (at most BLOCK),
     * reads overlapped as in {@link #contains(long[], int, boolean[], int, long[])}.
     */
    void lookup(long[] keyHashes, int count, int[] out, int from, long[] starts) {
        long touched = touch(keyHashes, count, starts);
        for (int i = 0; i < count; i++) {
            long hash = keyHashes[i];
            long start = starts[i];
            out[from + i] = bumps(start) ? lookupFromLayer1(hash) : row(start, hash);
        }
        if (touched == 42) sink = touched;
    }

    /**
     * Replaces keyHashes[i] by layer 0's hash and sets starts[i], reading each key's threshold
     * word and the first word of each of its row's two blocks on the way: loads whose results
     * no branch waits for (a key layer 0 bumps has its row read too, in vain), so the core
     * keeps many of them in flight. Returns their XOR, for the caller to keep.
     */
    private long touch(long[] keyHashes, int count, long[] starts) {
        long touched = 0;
        long[] h = heap;
        long[] c = codes;
        boolean coded = rule > SHARD_HEADS;
        int r = bits;
        for (int i = 0; i < count; i++) {
            long hash = layer0Hash(keyHashes[i]);
            keyHashes[i] = hash;
            long start = start(hash);
            starts[i] = start;
            int at = (int) (start >>> 6) * r;
            touched ^= h != null ? h[at] ^ h[at + r] : solution.get(at) ^ solution.get(at + r);
            if (coded) touched ^= c[codeWord(start)];
        }
        return touched;
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
