package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The lanes' arithmetic (Lanes, and VectorLanes where the JVM has jdk.incubator.vector) against
 * plain definitions. ctest runs these twice: in java.junit without the module (the scalar code
 * must be chosen) and in java.junit_vector with it (-Ddev.ribbon.expectLanes=vector), where
 * CorpusTest and ReaderTest run again on the vector code.
 */
class LanesTest {
    /** The implementation this JVM must have chosen. */
    @Test
    void chosenAsTheJvmAllows() {
        assertEquals(System.getProperty("dev.ribbon.expectLanes", "scalar"), Lanes.CHOSEN.name());
    }

    /** Bit j: the parity of word j of the block and word j of the next, under the masks. */
    private static int row8Reference(long[] s, int at, long low, long high) {
        int result = 0;
        for (int j = 0; j < 8; j++) {
            long x = (s[at + j] & low) ^ (s[at + 8 + j] & high);
            int parity = 0;
            for (int b = 0; b < 64; b++) parity ^= (int) (x >>> b) & 1;
            result |= parity << j;
        }
        return result;
    }

    @Test
    void row8IsEachWordsParity() {
        SplittableRandom random = new SplittableRandom(3);
        long[] s = new long[64];
        for (Lanes lanes : new Lanes[] {Lanes.CHOSEN, new Lanes()}) {
            for (int trial = 0; trial < 20000; trial++) {
                for (int i = 0; i < s.length; i++) {
                    // Sparse words too, so that parities of 0 and 1 both occur in every lane.
                    s[i] = trial % 3 == 0 ? 1L << random.nextInt(64) : random.nextLong();
                }
                int at = random.nextInt(s.length - 15);
                long low = trial % 5 == 0 ? -1L : random.nextLong();
                long high = trial % 7 == 0 ? 0 : random.nextLong();
                assertEquals(row8Reference(s, at, low, high), lanes.row8(s, at, low, high),
                        lanes.name() + ", trial " + trial);
            }
        }
    }

    @Test
    void hashLongsIsHashLong() {
        SplittableRandom random = new SplittableRandom(5);
        long[] keys = random.longs(200).toArray();
        long[] out = new long[80];
        for (Lanes lanes : new Lanes[] {Lanes.CHOSEN, new Lanes()}) {
            for (int count = 0; count <= out.length; count++) {
                int from = random.nextInt(keys.length - count + 1);
                long seedMixed = Hashing.seedMix(random.nextLong());
                lanes.hashLongs(keys, from, count, seedMixed, out);
                for (int i = 0; i < count; i++) {
                    assertEquals(Hashing.hashLong(keys[from + i], seedMixed), out[i],
                            lanes.name() + ", count " + count);
                }
            }
        }
    }
}
