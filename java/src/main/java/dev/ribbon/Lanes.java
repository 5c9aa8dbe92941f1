package dev.ribbon;

import java.util.Optional;

/**
 * The arithmetic of the hot loops that SIMD lanes can do several keys (or words) at once: the
 * parities of a w = 64, r = 8 row and the hashing of a block of integer keys. This class is
 * the scalar code; {@code dev.ribbon.VectorLanes}, compiled apart (java/CMakeLists.txt: the
 * incubator module cannot be compiled with -Werror) with the Vector API, overrides it and is
 * loaded only where the JVM has the module {@code jdk.incubator.vector} ({@code java
 * --add-modules jdk.incubator.vector}; Spark 4's executors add it). {@link #CHOSEN} is a
 * constant, so the JIT calls one implementation directly and inlines it.
 */
class Lanes {
    /** The implementation queries use: VectorLanes where the module is present, else this. */
    static final Lanes CHOSEN = choose();

    /** What {@link #CHOSEN} is: "vector" or "scalar" (tests assert which was loaded). */
    String name() {
        return "scalar";
    }

    /**
     * The r = 8 row result: bit j is the parity of {@code s[at + j] & low ^ s[at + 8 + j] &
     * high} (docs/format.md, section 8): its block's word j and the next block's.
     */
    int row8(long[] s, int at, long low, long high) {
        // Each word's count in a byte of its own (at most 64: no carry into the next byte), four
        // to an int (int arithmetic: no widening of each count to a long), then the 4 low bits
        // of each gathered by a multiply: 8 popcounts, two packs.
        int counts0to3 = Long.bitCount(s[at] & low ^ s[at + 8] & high)
                | Long.bitCount(s[at + 1] & low ^ s[at + 9] & high) << 8
                | Long.bitCount(s[at + 2] & low ^ s[at + 10] & high) << 16
                | Long.bitCount(s[at + 3] & low ^ s[at + 11] & high) << 24;
        int counts4to7 = Long.bitCount(s[at + 4] & low ^ s[at + 12] & high)
                | Long.bitCount(s[at + 5] & low ^ s[at + 13] & high) << 8
                | Long.bitCount(s[at + 6] & low ^ s[at + 14] & high) << 16
                | Long.bitCount(s[at + 7] & low ^ s[at + 15] & high) << 24;
        return gatherLowBits(counts0to3) | gatherLowBits(counts4to7) << 4;
    }

    /**
     * Bit 0 of byte j of x, as bit j of the result (j below 4): the multiply moves bits 0, 8,
     * 16 and 24 to 24 to 27, every other product lands on a bit of its own below 24 or above 31.
     */
    static int gatherLowBits(int x) {
        return ((x & 0x01010101) * 0x01020408) >>> 24;
    }

    /** out[i] = Hashing.hashLong(keys[from + i], seedMixed) for i below count. */
    void hashLongs(long[] keys, int from, int count, long seedMixed, long[] out) {
        for (int i = 0; i < count; i++) out[i] = Hashing.hashLong(keys[from + i], seedMixed);
    }

    /**
     * VectorLanes where the module is present (and the system property {@code
     * dev.ribbon.lanes} is not "scalar"), else the scalar code.
     */
    private static Lanes choose() {
        if ("scalar".equals(System.getProperty("dev.ribbon.lanes"))) return new Lanes();
        Optional<Module> vector = ModuleLayer.boot().findModule("jdk.incubator.vector");
        if (vector.isEmpty()) return new Lanes();
        try {
            return (Lanes) Class.forName("dev.ribbon.VectorLanes").getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return new Lanes();  // a jar built without them, or an API the classes do not link to
        }
    }
}
