package dev.ribbon.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ribbon.RibbonException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A filter file replaced under the same path answers with its new contents, through the
 * per-JVM cache and the functions' per-instance one (called here outside a Spark task, as the
 * driver calls the registered instance). The golden files of tests/data: v1_lines_3000 holds
 * the byte-string keys "1" to "3000", v1_u64_5000_w128_r13 the integer keys i * 0x9E3779B97F4A7C15.
 */
class FilterCacheTest {
    static final Path LINES = Path.of("tests", "data", "v1_lines_3000.rbn");
    static final Path U64 = Path.of("tests", "data", "v1_u64_5000_w128_r13.rbn");
    static final long U64_STEP = 0x9E3779B97F4A7C15L;

    @TempDir
    Path dir;

    private static int u64Members(ContainsFunction f, String path) {
        int found = 0;
        for (long i = 0; i < 5000; i++) found += f.call(path, i * U64_STEP) ? 1 : 0;
        return found;
    }

    @Test
    void fileRewrittenInPlaceAnswersAnew() throws IOException {
        Path file = dir.resolve("f.rbn");
        Files.copy(LINES, file);
        String path = file.toString();
        ContainsFunction contains = new ContainsFunction();
        assertTrue(contains.call(path, "1"));
        Files.copy(U64, file, StandardCopyOption.REPLACE_EXISTING);  // same inode, new size
        assertEquals(5000, u64Members(contains, path));
        assertThrows(RibbonException.class, () -> contains.call(path, "1"));  // integer keys now
    }

    @Test
    void fileReplacedByRenameAnswersAnew() throws IOException {
        Path file = dir.resolve("f.rbn");
        Files.copy(U64, file);
        String path = file.toString();
        ContainsFunction contains = new ContainsFunction();
        assertEquals(5000, u64Members(contains, path));
        Path next = dir.resolve("next.rbn");
        Files.copy(LINES, next);
        Files.setLastModifiedTime(next, Files.getLastModifiedTime(file));
        Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        for (int i = 1; i <= 3000; i++) assertTrue(contains.call(path, Integer.toString(i)), "key " + i);
    }

    @Test
    void sameSizeAndTimeButAnotherFileIsAnotherStamp() throws IOException {
        Path a = dir.resolve("a.rbn");
        Path b = dir.resolve("b.rbn");
        Files.copy(LINES, a);
        Files.copy(LINES, b);
        FileTime time = Files.getLastModifiedTime(a);
        Files.setLastModifiedTime(b, time);
        assertTrue(FilterCache.Stamp.of(a.toString()).sameAs(FilterCache.Stamp.of(a.toString())));
        assertFalse(FilterCache.Stamp.of(a.toString()).sameAs(FilterCache.Stamp.of(b.toString())));
    }

    @Test
    void unchangedFileIsMappedOnce() throws IOException {
        Path file = dir.resolve("f.rbn");
        Files.copy(LINES, file);
        assertSame(FilterCache.get(file.toString()), FilterCache.get(file.toString()));
    }

    @Test
    void deletedOrCorruptedFileIsAnErrorNotItsOldAnswers() throws IOException {
        Path file = dir.resolve("f.rbn");
        Files.copy(LINES, file);
        String path = file.toString();
        LookupFunction lookup = new LookupFunction();
        ContainsFunction contains = new ContainsFunction();
        assertTrue(contains.call(path, "2"));
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length - 1] ^= 1;  // the last solution word: a checksum mismatch
        FileTime before = Files.getLastModifiedTime(file);
        Files.write(file, bytes);
        // Same size and inode: the time tells (set apart, as file-system clocks are coarse).
        Files.setLastModifiedTime(file, FileTime.fromMillis(before.toMillis() + 2000));
        assertThrows(RibbonException.class, () -> contains.call(path, "2"));
        Files.delete(file);
        assertThrows(RibbonException.class, () -> contains.call(path, "2"));
        assertThrows(RibbonException.class, () -> lookup.call(path, "2"));
    }
}
