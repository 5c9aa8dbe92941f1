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
    /** The header's key kind: 0 integer keys, 1 byte strings (others refused by problem()). */
    final int keyKind;
    final int extraBitFraction;
    final boolean twoBitCodes;
    /** Retrieval: fingerprint bits of the key hash stored above each value (version 4; else 0). */
    final int checkBits;
    /** Filter sets: 1 groups named by integers, 2 by byte strings (version 6; else 0). */
    final int groupKind;

    private FilterParams(int width, int resultBits, int bucketSize, int thresholdLight,
            int thresholdHeavy, boolean twoBitCodes, long shardSize, long seed, int keyKind,
            Variant variant, int extraBitFraction, int checkBits, int groupKind) {
        this.width = width;
        this.resultBits = resultBits;
        this.bucketSize = bucketSize;
        this.thresholdLight = thresholdLight;
        this.thresholdHeavy = thresholdHeavy;
        this.twoBitCodes = twoBitCodes;
        this.shardSize = shardSize;
        this.seed = seed;
        this.keyKind = keyKind;
        this.byteKeys = keyKind == 1;
        this.variant = variant;
        this.extraBitFraction = extraBitFraction;
        this.checkBits = checkBits;
        this.groupKind = groupKind;
    }

    /** A standard header's fields as stored (unchecked: see {@link #problem()}). */
    static FilterParams standard(MappedFile f, Variant variant) {
        return new FilterParams(f.getInt(32), f.getInt(36), f.getInt(40), f.getInt(44), f.getInt(48),
                f.getInt(52) == 1, f.getLong(56), f.getLong(64), f.getInt(28), variant, f.getInt(96),
                f.getInt(100), f.getInt(112));
    }

    /** A compact header's fields (docs/format.md, section 10), unchecked; bucket and shard bits
     *  below 32 and 64 (the parser checks them first). */
    static FilterParams compact(MappedFile f, Variant variant) {
        return new FilterParams(f.getByte(14) & 0xFF, f.getByte(15) & 0xFF, 1 << (f.getByte(51) & 0xFF),
                f.getInt(40), f.getInt(44), f.getByte(53) == 1, 1L << (f.getByte(52) & 0xFF),
                f.getLong(16), f.getByte(13) & 0xFF, variant,
                (f.getByte(48) & 0xFF) | (f.getByte(49) & 0xFF) << 8, f.getByte(50) & 0xFF, 0);
    }

    /** Bits of a stored value: r less the check bits. */
    int valueBits() {
        return resultBits - checkBits;
    }

    /** Offsets below threshold(code) in a bucket with that 2-bit code are bumped. */
    int threshold(int code) {
        return code == 0 ? 0 : code == 1 ? thresholdLight : code == 2 ? thresholdHeavy : bucketSize;
    }

    static boolean isPowerOfTwo(long x) {
        return x > 0 && (x & (x - 1)) == 0;
    }

    /** Null if usable, else what is wrong (the checks of the C++ reader, in its order). */
    String problem() {
        long r = Integer.toUnsignedLong(resultBits);
        long b = Integer.toUnsignedLong(bucketSize);
        long light = Integer.toUnsignedLong(thresholdLight);
        long heavy = Integer.toUnsignedLong(thresholdHeavy);
        long fraction = Integer.toUnsignedLong(extraBitFraction);
        if (width != 32 && width != 64 && width != 128) return "ribbon width must be 32, 64 or 128";
        if (r < 1 || r > 32) return "result bits must be between 1 and 32";
        if (!isPowerOfTwo(b) || b < width || b > 65536) {
            return "bucket size must be a power of two between the width and 65536";
        }
        if (!(0 < light && light <= heavy && heavy <= b)) {
            return "bucket thresholds must satisfy 0 < light <= heavy <= bucket size";
        }
        if (!isPowerOfTwo(shardSize) || shardSize < 32 * b || shardSize > (1L << 31)) {
            return "shard size must be a power of two between 32 buckets and 2^31";
        }
        if (keyKind != 0 && keyKind != 1) return "unknown key kind";
        if (groupKind != 0 && groupKind != 1 && groupKind != 2) return "unknown group kind";
        if (groupKind != 0 && variant.retrieval) {
            return "a filter set is a filter (retrieval structures have no groups)";
        }
        if (fraction >= 65536) return "extra-bit fraction must be below 1";
        if (fraction != 0 && (variant.retrieval || r >= 32)) {
            return "fractional bits per key need a filter with fewer than 32 result bits";
        }
        if (checkBits != 0 && !variant.retrieval) {
            return "check bits are for retrieval structures (a filter's r bits are all check bits)";
        }
        if (checkBits != 0 && Integer.toUnsignedLong(checkBits) >= r) {
            return "check bits must leave at least one of the result bits for the value";
        }
        return null;
    }
}
