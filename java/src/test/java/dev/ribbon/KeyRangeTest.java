package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * A byte-string key read where it lies in a larger array ({@code contains(key, offset,
 * length)}, {@code find(key, offset, length)}: Spark strings hashed in place) answers as the
 * same key copied out. tests/data's v1_lines_3000 holds the keys "1" to "3000";
 * v4_values_3000_c6 is a retrieval file with 6 check bits over byte-string keys.
 */
class KeyRangeTest {
    static final Path DATA = Path.of("tests", "data");

    /** Each key in the middle of a row of other bytes, as UTF8String sees it in an UnsafeRow. */
    private static byte[] padded(byte[] key, int before) {
        byte[] row = new byte[before + key.length + 5];
        java.util.Arrays.fill(row, (byte) 'x');
        System.arraycopy(key, 0, row, before, key.length);
        return row;
    }

    @Test
    void containsOfARangeEqualsContainsOfTheCopy() {
        RibbonFilter f = RibbonFilter.open(DATA.resolve("v1_lines_3000.rbn"));
        int found = 0;
        for (int i = 0; i < 6000; i++) {
            byte[] key = Integer.toString(i).getBytes(StandardCharsets.US_ASCII);
            int before = i % 13;
            boolean inPlace = f.contains(padded(key, before), before, key.length);
            assertEquals(f.contains(key), inPlace, "key " + i);
            found += inPlace ? 1 : 0;
        }
        assertEquals(true, found >= 3000);
        assertThrows(RibbonException.class, () -> f.find(new byte[3], 0, 1));  // a filter: no values
    }

    @Test
    void findOfARangeEqualsFindOfTheCopy() {
        RibbonFilter f = RibbonFilter.open(DATA.resolve("v4_values_3000_c6.rbn"));
        int present = 0;
        for (int i = 0; i < 6000; i++) {
            byte[] key = ("k" + i).getBytes(StandardCharsets.US_ASCII);
            int before = 7 - i % 7;
            assertEquals(f.find(key), f.find(padded(key, before), before, key.length), "key " + i);
            present += f.find(key).isPresent() ? 1 : 0;
        }
        assertEquals(true, present > 0);
    }
}
