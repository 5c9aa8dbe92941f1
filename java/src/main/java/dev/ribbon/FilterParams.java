package dev.ribbon;

/** The parameters a file header records (docs/format.md, section 2), checked. */
final class FilterParams {
    final int width;
    final int resultBits;
    final int bucketSize;
    final int thresholdLight;
    final int thresholdHeavy;
    final Variant variant;
    final long shardSize;
    final long seed;
    final boolean byteKeys;
    final int extraBitFraction;
    final boolean twoBitCodes;

    FilterParams(MappedFile f, Variant variant) {
        this.width = f.getInt(32);
        this.resultBits = f.getInt(36);
        this.bucketSize = f.getInt(40);
        this.thresholdLight = f.getInt(44);
        this.thresholdHeavy = f.getInt(48);
        this.twoBitCodes = f.getInt(52) == 1;
        this.shardSize = f.getLong(56);
        this.seed = f.getLong(64);
        this.byteKeys = f.getInt(28) == 1;
        this.variant = variant;
        this.extraBitFraction = f.getInt(96);
    }

    /** Offsets below threshold(code) in a bucket with that 2-bit code are bumped. */
    int threshold(int code) {
        return code == 0 ? 0 : code == 1 ? thresholdLight : code == 2 ? thresholdHeavy : bucketSize;
    }

    static boolean isPowerOfTwo(long x) {
        return x > 0 && (x & (x - 1)) == 0;
    }

    /** Null if usable, else what is wrong (the checks of the C++ reader, in its order). */
    static String problem(MappedFile f) {
        int width = f.getInt(32);
        long r = Integer.toUnsignedLong(f.getInt(36));
        long b = Integer.toUnsignedLong(f.getInt(40));
        long light = Integer.toUnsignedLong(f.getInt(44));
        long heavy = Integer.toUnsignedLong(f.getInt(48));
        long shard = f.getLong(56);
        int keys = f.getInt(28);
        long fraction = Integer.toUnsignedLong(f.getInt(96));
        if (width != 32 && width != 64 && width != 128) return "ribbon width must be 32, 64 or 128";
        if (r < 1 || r > 32) return "result bits must be between 1 and 32";
        if (!isPowerOfTwo(b) || b < width || b > 65536) {
            return "bucket size must be a power of two between the width and 65536";
        }
        if (!(0 < light && light <= heavy && heavy <= b)) {
            return "bucket thresholds must satisfy 0 < light <= heavy <= bucket size";
        }
        if (!isPowerOfTwo(shard) || shard < 32 * b || shard > (1L << 31)) {
            return "shard size must be a power of two between 32 buckets and 2^31";
        }
        if (keys != 0 && keys != 1) return "unknown key kind";
        if (fraction >= 65536) return "extra-bit fraction must be below 1";
        Variant v = Variant.of(f.getInt(24));
        if (fraction != 0 && (v.retrieval || r >= 32)) {
            return "fractional bits per key need a filter with fewer than 32 result bits";
        }
        return null;
    }
}
