package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Row results of every width and shift against a BigInteger model of docs/format.md, section 8. */
class RowsTest {
    @TempDir
    Path dir;

    private static BigInteger word(byte[] bytes, int at, int width) {
        byte[] big = new byte[width / 8 + 1];  // a leading 0: non-negative
        for (int i = 0; i < width / 8; i++) big[big.length - 1 - i] = bytes[at + i];
        return new BigInteger(big);
    }

    private static BigInteger unsigned(long x) {
        return new BigInteger(Long.toUnsignedString(x));
    }

    /** The coefficient word of a layer hash, as section 7 defines it. */
    private static BigInteger coefficients(long hash, int width) {
        BigInteger low = unsigned((hash * Rows.COEFFICIENT_MULTIPLIER) | 1);
        if (width == 32) return low.and(BigInteger.valueOf(0xFFFFFFFFL));
        if (width == 64) return low;
        BigInteger high = unsigned(Long.rotateLeft(hash, 32) * Rows.COEFFICIENT_MULTIPLIER_HIGH);
        return high.shiftLeft(64).or(low);
    }

    private static int model(byte[] bytes, int width, int bits, int shift, long hash) {
        BigInteger mask = BigInteger.ONE.shiftLeft(width).subtract(BigInteger.ONE);
        BigInteger c = coefficients(hash, width);
        BigInteger low = c.shiftLeft(shift).and(mask);
        BigInteger high = c.shiftRight(width - shift);
        int result = 0;
        for (int j = 0; j < bits; j++) {
            BigInteger here = word(bytes, j * width / 8, width);
            BigInteger next = word(bytes, (j + bits) * width / 8, width);
            result |= (here.and(low).xor(next.and(high)).bitCount() & 1) << j;
        }
        return result;
    }

    @Test
    void everyWidthAndShiftMatchesTheModel() throws IOException {
        SplittableRandom rng = new SplittableRandom(7);
        byte[] bytes = new byte[2 * 33 * 16];
        for (int i = 0; i < bytes.length; i++) bytes[i] = (byte) rng.nextInt(256);
        Path file = dir.resolve("words");
        Files.write(file, bytes);
        MappedFile mapped = MappedFile.map(file, MappedFile.DEFAULT_CHUNK_BITS);
        for (int width : new int[] {32, 64, 128}) {
            for (int bits : new int[] {1, 7, 8, 16, 33}) {
                for (int shift = 0; shift < width; shift++) {
                    for (int k = 0; k < 4; k++) {
                        long hash = rng.nextLong();
                        int expected = model(bytes, width, bits, shift, hash);
                        int actual = width == 32 ? Rows.result32(mapped, 0, bits, shift, hash)
                                : width == 64 ? Rows.result64(mapped, 0, bits, shift, hash)
                                : Rows.result128(mapped, 0, bits, shift, hash);
                        assertEquals(expected, actual, "w=" + width + " bits=" + bits + " shift=" + shift);
                    }
                }
            }
        }
    }
}
