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
            return readBits(file, offset, (long) field * (indexBits + 1), indexBits + 1);
        }

        long entriesOffset() {
            return offset + 8 * (headerWords + bitWords(buckets));
        }

        long entry(long i) {
            return readBits(file, entriesOffset(), i * indexBits, indexBits);
        }

        /** Is `bucket` among the list's entries? The search starts where its index would put it. */
        boolean lists(long bucket) {
            long count = field(COUNT);
            if (count == 0) return false;
            long i = (bucket * count) >>> indexBits;
            if (entry(i) < bucket) {
                do i++; while (i < count && entry(i) < bucket);
            } else {
                while (i > 0 && entry(i - 1) >= bucket) i--;
            }
            return i < count && entry(i) == bucket;
        }

        boolean all(long bucket) {
            return bucket >= field(ALL_FROM) || bucket == field(ALL_A) || bucket == field(ALL_B);
        }

        boolean heavy(long bucket) {
            return bucket >= field(HEAVY_FROM) || lists(bucket);
        }
    }

    Region region(MappedFile file, long section, long shard) {
        return new Region(file, regionOffset(section, shard), shardBuckets(shard));
    }

    /** Is the key at `offset` in layer bucket `bucket` bumped? */
    boolean bumps(MappedFile file, long section, long bucket, int offset, int light, int heavy) {
        long shard = bucket >>> indexBits;
        long local = bucket & ((1L << indexBits) - 1);
        long regionAt = regionOffset(section, shard);
        long bitWord = file.getLong(regionAt + 8 * (headerWords + (local >>> 6)));
        if (((bitWord >>> (local & 63)) & 1) == 0) return false;
        if (offset < light) return true;
        Region region = new Region(file, regionAt, shardBuckets(shard));
        if (region.all(local)) return true;
        return offset < heavy && region.heavy(local);
    }
}
