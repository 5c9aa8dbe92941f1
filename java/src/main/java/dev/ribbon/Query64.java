package dev.ribbon;

/**
 * The query of a w = 64 file whose blocks all hold r words (no fractional bits) and which is
 * mapped in one window, with everything that does not depend on the key worked out at open
 * for every layer (as the C++ query plan does): its solution ({@link Words}: a heap copy where
 * the heap can spare it, else the mapped buffer), its bucket codes as 2-bit codes in an array
 * (1+-bit codes decoded: one word read decides a key), its cut points and r. The layers are
 * walked by {@link LayerQuery#walk}, as the general ones; the JIT inlines that walk, with this
 * class's layer code, into the caller's loop.
 */
final class Query64 {
    /** Keys whose layer-0 reads are issued before the first of them is answered. */
    static final int BLOCK = 64;

    private final Planned[] layers;
    private final Planned first;

    private Query64(FilterParams p, Layer[] fileLayers, MappedFile file, long heapBytes) {
        layers = new Planned[fileLayers.length];
        for (int l = 0; l < layers.length; l++) layers[l] = new Planned(p, fileLayers[l], file, heapBytes);
        first = layers[0];
    }

    /**
     * The plan of a file it fits (see the class comment), else null; a layer's solution is
     * copied into the heap if it takes at most {@code heapBytes} bytes ({@link Words}).
     */
    static Query64 of(FilterParams p, Layer[] layers, MappedFile file, long heapBytes) {
        if (p.width != 64 || p.extraBitFraction != 0 || layers.length == 0 || !file.isSingleWindow()
                || !cutsFit16Bits(p)) {
            return null;
        }
        return new Query64(p, layers, file, heapBytes);
    }

    /** Does each cut ({@link FilterParams#threshold}) fit the 16 bits {@link Planned} packs it in? */
    private static boolean cutsFit16Bits(FilterParams p) {
        for (int code = 0; code < 4; code++) {
            if (p.threshold(code) < 0 || p.threshold(code) > 0xFFFF) return false;
        }
        return true;
    }

    /**
     * {@link LayerQuery#walk} of the key whose key hash is `keyHash`: layer 0 decided here (its
     * class is known: no type check), the bumped keys walked on from layer 1.
     */
    int residue(long keyHash, int rhsMask, int absent) {
        Planned layer0 = first;
        long hash = layer0.firstHash(keyHash);
        long start = layer0.start(hash);
        if (layer0.bumps(start)) return LayerQuery.walkOn(layers, 1, hash, rhsMask, absent);
        return layer0.residue(start, hash, rhsMask);
    }

    /**
     * {@link #residue} of keyHashes[i] in out[i] for i below count (at most BLOCK), in passes as
     * the C++ batched pipeline: every key's layer-0 start, with its threshold word and row lines
     * read ({@link Planned#touch}: a short loop of loads that nothing waits for, so the misses
     * of the whole block overlap, as C++'s prefetches do); then layer 0 decides each key from
     * the cache and answers it, or walks it on from layer 1 where it bumps it (about 6 %).
     * keyHashes is overwritten (layer 0's hashes); starts is scratch.
     */
    void residues(long[] keyHashes, int count, int rhsMask, int absent, long[] starts, int[] out) {
        long touched = first.touch(keyHashes, count, starts);
        Planned layer0 = first;
        for (int i = 0; i < count; i++) {
            long start = starts[i];
            out[i] = layer0.bumps(start) ? LayerQuery.walkOn(layers, 1, keyHashes[i], rhsMask, absent)
                    : layer0.residue(start, keyHashes[i], rhsMask);
        }
        if (touched == 42) sink = touched;  // keeps the reads: their values are not needed
    }

    /** Keeps {@link Planned#touch}'s reads from being removed. */
    @SuppressWarnings("unused")
    private static volatile long sink;

    /** One layer of the plan. */
    private static final class Planned extends LayerQuery {
        private final Words solution;
        /**
         * The solution where it was copied into the heap, else null: the queries read this
         * array directly (one null test a query, then plain loads whose bounds checks the JIT
         * merges) rather than through {@link Words#get}, a call site that turns bimorphic, with
         * a type check per read, once a JVM has seen both kinds of {@link Words}.
         */
        private final long[] heap;
        /**
         * The bucket codes, 2 bits each: a 2-bit file's, or a 1+-bit file's decoded at open;
         * one word of code 0 (bumps nothing) read for every start where the layer has no
         * thresholds (it bumps shard heads at most): no null test on the way.
         */
        private final long[] codes;
        private final long numStarts;
        /** A shard's start mask (all but the sign bit where the layer bumps no shard heads). */
        private final long shardMask;
        private final int bucketBits;
        private final int bucketMask;
        /**
         * Offsets below the cut of a bucket's 2-bit code are bumped: the 4 cuts, 16 bits each, in
         * one long (no branch on the code, no array bounds check).
         */
        private final long cuts;
        /** The code word of a start: start >>> codeShift (32 codes a word; 63 where there are none). */
        private final int codeShift;
        private final int bits;

        Planned(FilterParams p, Layer layer, MappedFile file, long heapBytes) {
            super(layer.salt);
            this.solution = Words.of(file.words(layer.solutionOffset, layer.solutionBytes()), heapBytes);
            this.heap = solution.array();
            boolean thresholds = layer.kind == Layer.KIND_BUMPED;
            this.codes = thresholds ? twoBitCodes(p, layer, file) : new long[1];
            this.numStarts = layer.numStarts;
            this.shardMask = layer.kind == Layer.KIND_PLAIN || layer.shardBits >= 63 ? -1L >>> 1
                    : (1L << layer.shardBits) - 1;
            this.bucketBits = Integer.numberOfTrailingZeros(p.bucketSize);
            this.bucketMask = p.bucketSize - 1;
            long packed = 0;
            for (int code = 0; code < 4; code++) packed |= (long) p.threshold(code) << (16 * code);
            this.cuts = packed;
            this.codeShift = thresholds ? bucketBits + 5 : 63;
            this.bits = p.resultBits;
        }

        /** The codes as 2-bit codes: a copy of a 2-bit file's, or the 1+-bit codes decoded. */
        private static long[] twoBitCodes(FilterParams p, Layer layer, MappedFile file) {
            if (!p.twoBitCodes) return layer.regions.decodeToTwoBit(file, layer.thresholdOffset, layer.numBuckets());
            long[] words = new long[Math.toIntExact(layer.thresholdBytes() / 8)];
            file.words(layer.thresholdOffset, layer.thresholdBytes()).get(words);
            return words;
        }

        @Override
        long start(long hash) {
            // Hashing.unsignedMultiplyHigh, less its term for a negative numStarts (it is below 2^63).
            return Math.multiplyHigh(hash, numStarts) + ((hash >> 63) & numStarts);
        }

        @Override
        boolean bumps(long start) {
            // A shard's head: rare, so the branch on the first test is predicted.
            if ((start & shardMask) < 64 && start > shardMask) return true;
            // A long shift takes its count mod 64: 2 * (bucket mod 32).
            int code = (int) (codes[(int) (start >>> codeShift)] >>> ((start >>> bucketBits) << 1)) & 3;
            return ((int) start & bucketMask) < ((int) (cuts >>> (code << 4)) & 0xFFFF);
        }

        /**
         * One method, not two: the Vector API's calls are deep, and C2 intrinsifies them only
         * within its inlining depth (15 levels from the compiled method, in JDK 17).
         */
        @Override
        int residue(long start, long hash, int rhsMask) {
            int expected = Rows.fingerprint(hash, bits) & rhsMask;
            long coeff = (hash * Rows.COEFFICIENT_MULTIPLIER) | 1;
            int shift = (int) start & 63;
            long low = coeff << shift;
            long high = (coeff >>> 1) >>> (63 - shift);
            int r = bits;
            int at = (int) (start >>> 6) * r;
            long[] h = heap;
            if (h != null && r == 8) return Lanes.CHOSEN.row8(h, at, low, high) ^ expected;
            int result = 0;
            for (int j = 0; j < r; j++) {
                result |= (Long.bitCount(solution.get(at + j) & low ^ solution.get(at + r + j) & high) & 1) << j;
            }
            return result ^ expected;
        }

        /**
         * Replaces keyHashes[i] by this layer's (layer 0's) hash and sets starts[i], reading each
         * key's threshold word and its row's cache lines on the way: loads whose results no branch
         * waits for (a key the layer bumps has its row read too, in vain), so the core keeps many
         * of them in flight. A heap array is not aligned to cache lines, so a row's 2r words can
         * span three: its first, middle and last words are read. Returns their XOR, for the
         * caller to keep.
         */
        long touch(long[] keyHashes, int count, long[] starts) {
            long touched = 0;
            long[] h = heap;
            int r = bits;
            for (int i = 0; i < count; i++) {
                long hash = firstHash(keyHashes[i]);
                keyHashes[i] = hash;
                long start = start(hash);
                starts[i] = start;
                int at = (int) (start >>> 6) * r;
                touched ^= h != null ? h[at] ^ h[at + r] ^ h[at + 2 * r - 1]
                        : solution.get(at) ^ solution.get(at + r) ^ solution.get(at + 2 * r - 1);
                touched ^= codes[(int) (start >>> codeShift)];
            }
            return touched;
        }
    }
}
