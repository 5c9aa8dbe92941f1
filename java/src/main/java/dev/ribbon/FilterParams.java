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
    /** Filter sets: 1 groups named by integers, 2 by byte strings (version 6 or 7; else 0). */
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

    /** A compact header's fields (docs/format.md, sections 10 and 12) at the offsets of its
     *  version, unchecked; bucket and shard bits below 32 and 64 (the parser checks them first). */
    static FilterParams compact(MappedFile f, Variant variant, CompactHeader h) {
        return new FilterParams(f.getByte(h.width) & 0xFF, f.getByte(h.resultBits) & 0xFF,
                1 << (f.getByte(h.bucketBits) & 0xFF), f.getInt(h.thresholdLight), f.getInt(h.thresholdHeavy),
                f.getByte(h.thresholdEncoding) == 1, 1L << (f.getByte(h.shardBits) & 0xFF), f.getLong(h.seed),
                f.getByte(h.keyKind) & 0xFF, variant,
                (f.getByte(h.extraBitFraction) & 0xFF) | (f.getByte(h.extraBitFraction + 1) & 0xFF) << 8,
                f.getByte(h.checkBits) & 0xFF, h.groupKind < 0 ? 0 : f.getByte(h.groupKind) & 0xFF);
    }

    /** Where a compact header keeps its fields: version 5's 56 bytes, version 7's 72. */
    static final class CompactHeader {
        final int bytes, variant, keyKind, width, resultBits, thresholdLight, seed, keyCount, checksum,
                thresholdHeavy, extraBitFraction, checkBits, bucketBits, shardBits, thresholdEncoding,
                numLayers, groupKind, groupCount;
        /** The reserved field's offset and size in bytes (0 after it). */
        final int reserved, reservedBytes;

        private CompactHeader(int bytes, int variant, int keyKind, int width, int resultBits, int thresholdLight,
                int seed, int keyCount, int checksum, int thresholdHeavy, int extraBitFraction, int checkBits,
                int bucketBits, int shardBits, int thresholdEncoding, int numLayers, int groupKind,
                int reserved, int reservedBytes, int groupCount) {
            this.bytes = bytes;
            this.variant = variant;
            this.keyKind = keyKind;
            this.width = width;
            this.resultBits = resultBits;
            this.thresholdLight = thresholdLight;
            this.seed = seed;
            this.keyCount = keyCount;
            this.checksum = checksum;
            this.thresholdHeavy = thresholdHeavy;
            this.extraBitFraction = extraBitFraction;
            this.checkBits = checkBits;
            this.bucketBits = bucketBits;
            this.shardBits = shardBits;
            this.thresholdEncoding = thresholdEncoding;
            this.numLayers = numLayers;
            this.groupKind = groupKind;
            this.reserved = reserved;
            this.reservedBytes = reservedBytes;
            this.groupCount = groupCount;
        }

        /** Version 5 (section 10): no group fields (-1). */
        static final CompactHeader V5 = new CompactHeader(56, 12, 13, 14, 15, 40, 16, 24, 32, 44, 48, 50, 51, 52,
                53, 54, -1, 55, 1, -1);
        /** Version 7 (section 12). */
        static final CompactHeader V7 = new CompactHeader(72, 16, 17, 18, 19, 20, 24, 32, 40, 48, 52, 54, 55, 56,
                57, 58, 59, 60, 4, 64);
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
