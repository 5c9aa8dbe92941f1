package dev.ribbon;

/**
 * A key's row against the interleaved solution: bit j of the result is the parity of the row's
 * columns in word j of its block and word j of the next block (docs/format.md, section 8).
 */
final class Rows {
    static final long COEFFICIENT_MULTIPLIER = 0x9E3779B97F4A7C15L;
    static final long COEFFICIENT_MULTIPLIER_HIGH = 0xD6E8FEB86659FD93L;
    static final long FINGERPRINT_MULTIPLIER = 0xC2B2AE3D27D4EB4FL;

    private Rows() {}

    /** The `bits`-bit fingerprint of a layer hash. */
    static int fingerprint(long hash, int bits) {
        return (int) ((hash * FINGERPRINT_MULTIPLIER) >>> (64 - bits));
    }

    static int result32(MappedFile file, long block, int bits, int shift, long hash) {
        int coeff = (int) (hash * COEFFICIENT_MULTIPLIER) | 1;
        // coeff >>> (32 - shift), 0 for shift 0; 32-bit words as longs have the same parities.
        return result(file, block, 4, bits, (coeff << shift) & 0xFFFFFFFFL,
                ((coeff >>> 1) >>> (31 - shift)) & 0xFFFFFFFFL);
    }

    static int result64(MappedFile file, long block, int bits, int shift, long hash) {
        long coeff = (hash * COEFFICIENT_MULTIPLIER) | 1;
        return result(file, block, 8, bits, coeff << shift, (coeff >>> 1) >>> (63 - shift));
    }

    /** The row of w = 32 or 64 (wordBytes 4 or 8) with its coefficients in this block and the next. */
    private static int result(MappedFile file, long block, int wordBytes, int bits, long low, long high) {
        int result = 0;
        for (int j = 0; j < bits; j++) {
            long here = block + (long) wordBytes * j;
            long next = block + (long) wordBytes * (j + bits);
            long x = wordBytes == 4 ? file.getInt(here) & low ^ file.getInt(next) & high
                    : file.getLong(here) & low ^ file.getLong(next) & high;
            result |= (Long.bitCount(x) & 1) << j;
        }
        return result;
    }

    static int result128(MappedFile file, long block, int bits, int shift, long hash) {
        long coeffLo = (hash * COEFFICIENT_MULTIPLIER) | 1;
        long coeffHi = Long.rotateLeft(hash, 32) * COEFFICIENT_MULTIPLIER_HIGH;
        // low = coeff << shift and high = coeff >> (128 - shift), as (lo, hi) pairs.
        long lowLo, lowHi, highLo, highHi;
        if (shift == 0) {
            lowLo = coeffLo; lowHi = coeffHi; highLo = 0; highHi = 0;
        } else if (shift < 64) {
            lowLo = coeffLo << shift;
            lowHi = (coeffHi << shift) | (coeffLo >>> (64 - shift));
            highLo = coeffHi >>> (64 - shift);
            highHi = 0;
        } else if (shift == 64) {
            lowLo = 0; lowHi = coeffLo; highLo = coeffHi; highHi = 0;
        } else {
            int down = 128 - shift;  // 1 to 63
            lowLo = 0;
            lowHi = coeffLo << (shift - 64);
            highLo = (coeffLo >>> down) | (coeffHi << (64 - down));
            highHi = coeffHi >>> down;
        }
        int result = 0;
        for (int j = 0; j < bits; j++) {
            long here = block + 16L * j;
            long next = block + 16L * (j + bits);
            long x = (file.getLong(here) & lowLo) ^ (file.getLong(next) & highLo)
                    ^ (file.getLong(here + 8) & lowHi) ^ (file.getLong(next + 8) & highHi);
            result |= (Long.bitCount(x) & 1) << j;
        }
        return result;
    }
}
