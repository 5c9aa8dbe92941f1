package dev.ribbon;

/**
 * One layer of a mapped file: its geometry (docs/format.md, section 3) and the two questions
 * a query asks it: does it bump a key, and what is the key's row result.
 */
final class Layer extends LayerQuery {
    static final int KIND_BUMPED = 0;
    static final int KIND_PLAIN = 1;
    static final int KIND_STANDARD = 2;

    final int index;
    final long numStarts;
    final int shardBits;
    final int kind;
    final long upperStartBlock;
    final long numBlocks;
    /** File offsets of the sections (thresholds: 0 where there are none). */
    long thresholdOffset;
    long solutionOffset;

    private final FilterParams p;
    private final MappedFile file;
    private final long shardMask;
    private final int bucketBits;
    /** log2(w): blocks and shifts by shifting, not dividing (a division per query is slow). */
    private final int widthBits;
    /** 1+-bit codes: constants of the region layout (docs/format.md, section 6). */
    final CodeRegions regions;

    Layer(FilterParams p, MappedFile file, int index, long numStarts, int shardBits, int kind, long salt) {
        super(salt);
        this.p = p;
        this.file = file;
        this.index = index;
        this.numStarts = numStarts;
        this.shardBits = shardBits;
        this.kind = kind;
        this.numBlocks = numStarts / p.width + 1;
        long upper = (Math.multiplyHigh(numBlocks, p.extraBitFraction) << 48)
                | ((numBlocks * p.extraBitFraction) >>> 16);
        this.upperStartBlock = numBlocks - upper;
        this.shardMask = shardBits >= 63 ? -1L >>> 1 : (1L << shardBits) - 1;
        this.bucketBits = Integer.numberOfTrailingZeros(p.bucketSize);
        this.widthBits = Integer.numberOfTrailingZeros(p.width);
        this.regions = kind == KIND_BUMPED && !p.twoBitCodes
                ? new CodeRegions(numBuckets(), shardBits - bucketBits) : null;
    }

    long numShards() {
        return shardBits >= 63 ? 1 : (numStarts + shardMask) >>> shardBits;
    }

    long numBuckets() {
        return kind == KIND_BUMPED ? numStarts >>> bucketBits : 0;
    }

    /** Index of block `block`'s first word in the solution. */
    long blockWord(long block) {
        return block * p.resultBits + (block > upperStartBlock ? block - upperStartBlock : 0);
    }

    long solutionBytes() {
        return blockWord(numBlocks) * (p.width / 8);
    }

    long thresholdBytes() {
        long buckets = numBuckets();
        if (buckets == 0) return 0;
        return 8 * (p.twoBitCodes ? (buckets + 31) / 32 : regions.words());
    }

    /** The high word of hash times numStarts. */
    @Override
    long start(long hash) {
        return Hashing.unsignedMultiplyHigh(hash, numStarts);
    }

    @Override
    boolean bumps(long start) {
        if (kind == KIND_PLAIN) return false;
        if (start > shardMask && (start & shardMask) < p.width) return true;  // a shard's head
        if (kind != KIND_BUMPED) return false;
        long bucket = start >>> bucketBits;
        int offset = (int) (start & (p.bucketSize - 1));
        if (p.twoBitCodes) {
            long word = file.getLong(thresholdOffset + 8 * (bucket >>> 5));
            int code = (int) (word >>> (2 * (bucket & 31))) & 3;
            return offset < p.threshold(code);
        }
        return regions.bumps(file, thresholdOffset, bucket, offset, p.thresholdLight,
                p.thresholdHeavy);
    }

    /** Result bits of the block of `start`: r, or r + 1 in the upper blocks. */
    int resultBits(long start) {
        return p.resultBits + ((start >>> widthBits) >= upperStartBlock ? 1 : 0);
    }

    @Override
    int residue(long start, long hash, int rhsMask) {
        return result(start, hash) ^ (Rows.fingerprint(hash, resultBits(start)) & rhsMask);
    }

    /** The row result of the key with layer hash `hash` starting at `start` (not bumped here). */
    private int result(long start, long hash) {
        long block = start >>> widthBits;
        int bits = resultBits(start);
        int shift = (int) (start & (p.width - 1));
        long at = solutionOffset + blockWord(block) * (p.width / 8);
        switch (p.width) {
            case 32: return Rows.result32(file, at, bits, shift, hash);
            case 64: return Rows.result64(file, at, bits, shift, hash);
            default: return Rows.result128(file, at, bits, shift, hash);
        }
    }
}
