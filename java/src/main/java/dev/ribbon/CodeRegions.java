package dev.ribbon;

/**
 * The 1+-bit threshold codes of a bumped layer (docs/format.md, section 6): per shard a region
 * of a header (five fields), one bit per bucket, and a list of the code-2 buckets.
 */
final class CodeRegions {
    static final int COUNT = 0;
    static final int ALL_A = 1;
    static final int ALL_B = 2;
    static final int HEAVY_FROM = 3;
    static final int ALL_FROM = 4;
    static final int FIELDS = 5;

    /** Bits of a bucket index within a shard. */
    final int indexBits;
    final long headerWords;
    final long regionWords;
    final long lastShard;
    final long lastShardBuckets;

    CodeRegions(long numBuckets, int indexBits) {
        this.indexBits = indexBits;
        this.headerWords = headerWords(indexBits);
        this.regionWords = regionWords(1L << indexBits, indexBits);
        this.lastShard = numBuckets == 0 ? 0 : (numBuckets - 1) >>> indexBits;
        this.lastShardBuckets = numBuckets - (lastShard << indexBits);
    }

    static long headerWords(int indexBits) {
        return ((long) FIELDS * (indexBits + 1) + 63) / 64;
    }

    static long bitWords(long buckets) {
        return (buckets + 63) / 64;
    }

    static long listWords(long buckets, int indexBits) {
        long withHeader = (buckets * 9 + 1023) / 1024;
        long header = headerWords(indexBits);
        return withHeader > header ? withHeader - header : 1;
    }

    static long regionWords(long buckets, int indexBits) {
        return headerWords(indexBits) + bitWords(buckets) + listWords(buckets, indexBits);
    }

    static long capacity(long buckets, int indexBits) {
        return listWords(buckets, indexBits) * 64 / indexBits;
    }

    /** Words of all the regions of the layer. */
    long words() {
        return lastShard * regionWords + regionWords(lastShardBuckets, indexBits);
    }

    long shardBuckets(long shard) {
        return shard == lastShard ? lastShardBuckets : 1L << indexBits;
    }

    /** File offset of shard `shard`'s region in a section at `section`. */
    long regionOffset(long section, long shard) {
        return section + 8 * shard * regionWords;
    }

    /** The `bits`-bit field (bits < 64) at bit `bit` of the words at `words`. */
    static long readBits(MappedFile file, long words, long bit, int bits) {
        int shift = (int) (bit & 63);
        long at = words + 8 * (bit >>> 6);
        long value = file.getLong(at) >>> shift;
        if (shift + bits > 64) value |= file.getLong(at + 8) << (64 - shift);
        return value & ((1L << bits) - 1);
    }

    /** One region as a query reads it. */
    final class Region {
        final MappedFile file;
        final long offset;
        final long buckets;

        Region(MappedFile file, long offset, long buckets) {
            this.file = file;
            this.offset = offset;
            this.buckets = buckets;
        }

        boolean bit(long bucket) {
            return ((file.getLong(offset + 8 * (headerWords + (bucket >>> 6))) >>> (bucket & 63)) & 1) != 0;
        }

        long field(int field) {
            return CodeRegions.this.field(file, offset, field);
        }

        long entriesOffset() {
            return CodeRegions.this.entriesOffset(offset, buckets);
        }

        long entry(long i) {
            return CodeRegions.this.entry(file, entriesOffset(), i);
        }
    }

    long field(MappedFile file, long region, int field) {
        return readBits(file, region, (long) field * (indexBits + 1), indexBits + 1);
    }

    long entriesOffset(long region, long buckets) {
        return region + 8 * (headerWords + bitWords(buckets));
    }

    long entry(MappedFile file, long entries, long i) {
        return readBits(file, entries, i * indexBits, indexBits);
    }

    /** Is `bucket` among the list's entries? The search starts where its index would put it. */
    boolean lists(MappedFile file, long region, long buckets, long bucket) {
        long count = field(file, region, COUNT);
        if (count == 0) return false;
        long entries = entriesOffset(region, buckets);
        long i = (bucket * count) >>> indexBits;
        if (entry(file, entries, i) < bucket) {
            do i++; while (i < count && entry(file, entries, i) < bucket);
        } else {
            while (i > 0 && entry(file, entries, i - 1) >= bucket) i--;
        }
        return i < count && entry(file, entries, i) == bucket;
    }

    /** Does `bucket`, whose bit is 1, have code 3? */
    boolean all(MappedFile file, long region, long bucket) {
        return bucket >= field(file, region, ALL_FROM) || bucket == field(file, region, ALL_A)
                || bucket == field(file, region, ALL_B);
    }

    /** Does `bucket`, whose bit is 1 and whose code is not 3, have code 2? */
    boolean heavy(MappedFile file, long region, long buckets, long bucket) {
        return bucket >= field(file, region, HEAVY_FROM) || lists(file, region, buckets, bucket);
    }

    Region region(MappedFile file, long section, long shard) {
        return new Region(file, regionOffset(section, shard), shardBuckets(shard));
    }

    /** The word holding layer bucket `bucket`'s bit. */
    long bitWord(MappedFile file, long section, long bucket) {
        long local = bucket & ((1L << indexBits) - 1);
        return file.getLong(regionOffset(section, bucket >>> indexBits) + 8 * (headerWords + (local >>> 6)));
    }

    /** Is the key at `offset` in layer bucket `bucket` bumped? */
    boolean bumps(MappedFile file, long section, long bucket, int offset, int light, int heavy) {
        long local = bucket & ((1L << indexBits) - 1);
        if (((bitWord(file, section, bucket) >>> (local & 63)) & 1) == 0) return false;
        return setBucketBumps(file, section, bucket, offset, light, heavy);
    }

    /** The code (0 to 3) of layer bucket `bucket`. */
    int code(MappedFile file, long section, long bucket) {
        long shard = bucket >>> indexBits;
        long local = bucket & ((1L << indexBits) - 1);
        if (((bitWord(file, section, bucket) >>> (local & 63)) & 1) == 0) return 0;
        long regionAt = regionOffset(section, shard);
        if (all(file, regionAt, local)) return 3;
        return heavy(file, regionAt, shardBuckets(shard), local) ? 2 : 1;
    }

    /**
     * Every bucket's code written as 2-bit codes, 32 buckets a word: a query then decides with
     * one word read and no header or list (as the C++ query plan does).
     */
    long[] decodeToTwoBit(MappedFile file, long section, long buckets) {
        long[] words = new long[Math.toIntExact((buckets + 31) / 32)];
        for (long b = 0; b < buckets; b++) {
            words[(int) (b >>> 5)] |= (long) code(file, section, b) << (2 * (b & 31));
        }
        return words;
    }

    /** {@link #bumps} for a bucket whose bit is 1 (code 1, 2 or 3): the region's fields decide. */
    boolean setBucketBumps(MappedFile file, long section, long bucket, int offset, int light, int heavy) {
        if (offset < light) return true;
        long shard = bucket >>> indexBits;
        long local = bucket & ((1L << indexBits) - 1);
        long regionAt = regionOffset(section, shard);
        if (all(file, regionAt, local)) return true;
        return offset < heavy && heavy(file, regionAt, shardBuckets(shard), local);
    }
}
