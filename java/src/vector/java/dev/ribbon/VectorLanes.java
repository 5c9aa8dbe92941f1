package dev.ribbon;

import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Lanes} with the Vector API (jdk.incubator.vector): loaded by {@link Lanes#CHOSEN} only
 * where the JVM has the module. Compiled apart from the rest of the jar (java/CMakeLists.txt),
 * without -Werror: javac warns about every use of an incubator module.
 */
final class VectorLanes extends Lanes {
    /** The CPU's widest vectors of longs, at most 8 lanes (a row has 8 words a block). */
    private static final VectorSpecies<Long> ROW = LongVector.SPECIES_PREFERRED.length() >= 8
            ? LongVector.SPECIES_512 : LongVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> KEYS = LongVector.SPECIES_PREFERRED;

    @Override
    String name() {
        return "vector";
    }

    /** Lane j: 0x6996 (bit v: the parity of the 4-bit value v) shifted left by j. */
    private static final LongVector PARITY_TABLES;
    /** Lane j: 1 << j. */
    private static final LongVector LANE_BITS;

    static {
        long[] tables = new long[ROW.length()];
        long[] bits = new long[ROW.length()];
        for (int j = 0; j < bits.length; j++) {
            tables[j] = 0x6996L << j;
            bits[j] = 1L << j;
        }
        PARITY_TABLES = LongVector.fromArray(ROW, tables, 0);
        LANE_BITS = LongVector.fromArray(ROW, bits, 0);
    }

    /**
     * The row's 8 words of each block in lanes, ANDed with the row's coefficients and XORed;
     * each lane folded to 4 bits (JDK 17's API has no lanewise bit count), whose parity a
     * variable shift of a table puts at bit j of lane j; the lanes ORed together.
     */
    @Override
    int row8(long[] s, int at, long low, long high) {
        int result = 0;
        for (int j = 0; j < 8; j += ROW.length()) {
            LongVector x = LongVector.fromArray(ROW, s, at + j).and(low)
                    .lanewise(VectorOperators.XOR, LongVector.fromArray(ROW, s, at + 8 + j).and(high));
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 32));
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 16));
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 8));
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 4));
            x = PARITY_TABLES.lanewise(VectorOperators.LSHR, x.and(15L)).and(LANE_BITS);
            result |= (int) x.reduceLanes(VectorOperators.OR) << j;
        }
        return result;
    }

    /** Hashing.hashLong (mix64 of (key + seedMixed) * KEY_MULTIPLIER), a vector of keys at once. */
    @Override
    void hashLongs(long[] keys, int from, int count, long seedMixed, long[] out) {
        int i = 0;
        for (int end = KEYS.loopBound(count); i < end; i += KEYS.length()) {
            LongVector x = LongVector.fromArray(KEYS, keys, from + i).add(seedMixed).mul(Hashing.KEY_MULTIPLIER);
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33)).mul(Hashing.MIX_1);
            x = x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33)).mul(Hashing.MIX_2);
            x.lanewise(VectorOperators.XOR, x.lanewise(VectorOperators.LSHR, 33)).intoArray(out, i);
        }
        for (; i < count; i++) out[i] = Hashing.hashLong(keys[from + i], seedMixed);
    }
}
