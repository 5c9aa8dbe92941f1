package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The hash functions against values of the reference implementations. */
class HashingTest {
    private static byte[] range(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) i;
        return b;
    }

    /** lz4-java's XXH64 is the reference XXH64 (libxxhash's values), seed included. */
    @Test
    void xxh64MatchesTheReference() {
        assertEquals(0xEF46DB3751D8E999L, Hashing.hashBytes(new byte[0], 0));
        assertEquals(0x44BC2CF5AD770999L, Hashing.hashBytes("abc".getBytes(StandardCharsets.US_ASCII), 0));
        assertEquals(0x9C502A83DCB7C69EL, Hashing.hashBytes(range(100), 5));
        assertEquals(0x4919ADD0198D63B3L, Hashing.hashBytes("ribbon".getBytes(StandardCharsets.US_ASCII), -1L));
        assertEquals(0xB203925045F91D73L, Hashing.hashBytes(range(37), 0x8000000000000001L));
    }

    @Test
    void mix64IsMurmurFinalizer() {
        // fmix64(1) from MurmurHash3.
        assertEquals(0xB456BCFC34C2CB2CL, Hashing.mix64(1));
        assertEquals(0L, Hashing.mix64(0));
    }

    @Test
    void unsignedMultiplyHighMatchesBigInteger() {
        SplittableRandom rng = new SplittableRandom(1);
        BigInteger mask = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
        long[] edges = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE};
        for (int i = 0; i < 100_000; i++) {
            long a = i < 25 ? edges[i % 5] : rng.nextLong();
            long b = i < 25 ? edges[i / 5] : rng.nextLong();
            BigInteger product = new BigInteger(Long.toUnsignedString(a)).multiply(new BigInteger(Long.toUnsignedString(b)));
            assertEquals(product.shiftRight(64).and(mask).longValue(), Hashing.unsignedMultiplyHigh(a, b));
        }
    }
}
