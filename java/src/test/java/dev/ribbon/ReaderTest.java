package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The golden version-1 files of tests/data (their keys are known: tests/test_variants.cpp),
 * small mapping windows, batched calls, and refusals. The answers of every variant against the
 * C++ reader are java/tests/compare_answers.sh's.
 */
class ReaderTest {
    static final Path DATA = Path.of("tests", "data");
    static final Path LINES = DATA.resolve("v1_lines_3000.rbn");
    static final Path U64 = DATA.resolve("v1_u64_5000_w128_r13.rbn");

    @TempDir
    Path dir;

    private static byte[] text(int i) {
        return Integer.toString(i).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void goldenLinesFileHasEveryKey() {
        RibbonFilter f = RibbonFilter.open(LINES);
        assertEquals(1, f.formatVersion());
        assertEquals(3000, f.keyCount());
        assertEquals(Variant.BUMPED, f.variant());
        for (int i = 1; i <= 3000; i++) assertTrue(f.contains(text(i)), "key " + i);
        int positives = 0;
        for (int i = 3001; i <= 103000; i++) positives += f.contains(text(i)) ? 1 : 0;
        assertTrue(positives < 100000 / 256 * 2, positives + " false positives");
    }

    @Test
    void goldenU64FileHasEveryKey() {
        RibbonFilter f = RibbonFilter.open(U64);
        assertEquals(128, f.width());
        assertEquals(13, f.resultBits());
        for (long i = 0; i < 5000; i++) assertTrue(f.contains(i * 0x9E3779B97F4A7C15L), "key " + i);
    }

    /** Windows of 64 bytes: every read and checksum crosses windows, as in files over 2 GiB. */
    @Test
    void smallWindowsGiveTheSameAnswers() {
        RibbonFilter whole = RibbonFilter.open(U64);
        RibbonFilter windows = RibbonFilter.open(U64, 6);
        long[] keys = new long[20000];
        for (int i = 0; i < keys.length; i++) keys[i] = i * 0x9E3779B97F4A7C15L + (i % 2);
        boolean[] scalar = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) scalar[i] = whole.contains(keys[i]);
        assertArrayEquals(scalar, windows.contains(keys));
        assertArrayEquals(scalar, whole.contains(keys));
        RibbonFilter lines = RibbonFilter.open(LINES, 7);
        byte[][] texts = new byte[6000][];
        for (int i = 0; i < texts.length; i++) texts[i] = text(i + 1);
        boolean[] found = lines.contains(texts);
        RibbonFilter linesWhole = RibbonFilter.open(LINES);
        for (int i = 0; i < texts.length; i++) assertEquals(linesWhole.contains(texts[i]), found[i]);
    }

    /** Layer 0 copied into the heap (the default for small files) or read in place: the same answers. */
    @Test
    void heapCopyAndMappedReadsGiveTheSameAnswers() {
        RibbonFilter heap = RibbonFilter.open(LINES, MappedFile.DEFAULT_CHUNK_BITS, Long.MAX_VALUE);
        RibbonFilter mapped = RibbonFilter.open(LINES, MappedFile.DEFAULT_CHUNK_BITS, 0);
        byte[][] texts = new byte[20000][];
        for (int i = 0; i < texts.length; i++) texts[i] = text(i + 1);  // members: 1 to 3000
        boolean[] inHeap = heap.contains(texts);
        assertArrayEquals(inHeap, mapped.contains(texts));
        for (int i = 0; i < texts.length; i++) {
            assertEquals(inHeap[i], heap.contains(texts[i]), "key " + (i + 1));
            assertEquals(inHeap[i], mapped.contains(texts[i]), "key " + (i + 1));
        }
        for (int i = 0; i < 3000; i++) assertTrue(inHeap[i], "key " + (i + 1));
    }

    @Test
    void checksumsAcrossWindowsEqualWholeOnes() throws IOException {
        MappedFile whole = MappedFile.map(LINES, MappedFile.DEFAULT_CHUNK_BITS);
        MappedFile windows = MappedFile.map(LINES, 6);
        byte[] bytes = Files.readAllBytes(LINES);
        for (long[] range : new long[][] {{0, 120}, {5, 300}, {128, 0}, {64, bytes.length - 64}, {0, bytes.length}}) {
            long expected = Hashing.XXH64.hash(bytes, (int) range[0], (int) range[1], 0);
            assertEquals(expected, whole.checksum(range[0], range[1]));
            assertEquals(expected, windows.checksum(range[0], range[1]));
        }
    }

    @Test
    void wrongKeyKindAndVariantAreRefused() {
        RibbonFilter f = RibbonFilter.open(LINES);
        assertThrows(RibbonException.class, () -> f.contains(1L));
        assertThrows(RibbonException.class, () -> f.lookup(text(1)));
        assertThrows(RibbonException.class, () -> RibbonFilter.open(U64).contains(new byte[][] {text(1)}));
    }

    @Test
    void missingFilesAndDirectoriesAreRefused() {
        assertThrows(RibbonException.class, () -> RibbonFilter.open(dir.resolve("missing")));
        assertThrows(RibbonException.class, () -> RibbonFilter.open(dir));
    }

    /** Every truncation and every bit flip of the header and descriptors: a RibbonException. */
    @Test
    void corruptCopiesThrowOnlyRibbonException() throws IOException {
        byte[] bytes = Files.readAllBytes(LINES);
        Path copy = dir.resolve("copy.rbn");
        for (int size = 0; size < bytes.length; size += size < 256 ? 1 : 331) {
            Files.write(copy, Arrays.copyOf(bytes, size));
            assertThrows(RibbonException.class, () -> RibbonFilter.open(copy), "size " + size);
        }
        for (int bit = 0; bit < 8 * 512; bit += 7) {
            byte[] flipped = bytes.clone();
            flipped[bit / 8] ^= (byte) (1 << (bit % 8));
            Files.write(copy, flipped);
            assertThrows(RibbonException.class, () -> RibbonFilter.open(copy), "bit " + bit);
        }
    }
}
