package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The golden corpus (tests/data/corpus, its README.md): the Java reader answers every probe of
 * every file as recorded, scalar and batched, mapped in one window and in windows of 64 bytes.
 */
class CorpusTest {
    static final Path CORPUS = Path.of("tests", "data", "corpus");

    /** One line of MANIFEST.tsv. */
    record Entry(String file, int version, String kind, boolean u64Keys, String probes, String answers) {}

    static List<Entry> manifest() {
        List<Entry> entries = new ArrayList<>();
        for (String line : readLines(CORPUS.resolve("MANIFEST.tsv"))) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] c = line.split("\t", -1);
            assertEquals(8, c.length, line);
            entries.add(new Entry(c[0], Integer.parseInt(c[1]), c[2], c[3].equals("u64"), c[5], c[6]));
        }
        return entries;
    }

    static List<String> readLines(Path path) {
        List<String> lines = new ArrayList<>();
        for (byte[] line : readByteLines(path)) lines.add(new String(line, StandardCharsets.UTF_8));
        return lines;
    }

    /** The lines of a file as bytes (each ends in \n, which is not part of it). */
    static List<byte[]> readByteLines(Path path) {
        byte[] all;
        try {
            all = Files.readAllBytes(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<byte[]> lines = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < all.length; i++) {
            if (all[i] == '\n') {
                lines.add(Arrays.copyOfRange(all, start, i));
                start = i + 1;
            }
        }
        return lines;
    }

    static int indexOf(byte[] line, byte b) {
        for (int i = 0; i < line.length; i++) if (line[i] == b) return i;
        return -1;
    }

    static long hex(byte[] text) {
        return Long.parseUnsignedLong(new String(text, StandardCharsets.US_ASCII), 16);
    }

    @Test
    void manifestHoldsEveryFormatVersion() {
        TreeSet<Integer> versions = new TreeSet<>();
        for (Entry e : manifest()) versions.add(e.version());
        assertEquals(new TreeSet<>(List.of(1, 2, 3, 4, 5, 6, 7)), versions);
    }

    @TestFactory
    Stream<DynamicTest> everyFileAnswersAsRecorded() {
        return manifest().stream().map(e -> DynamicTest.dynamicTest(e.file(), () -> check(e)));
    }

    static void check(Entry e) {
        Path path = CORPUS.resolve(e.file());
        List<byte[]> probes = readByteLines(CORPUS.resolve(e.probes()));
        List<String> recorded = readLines(CORPUS.resolve(e.answers()));
        assertEquals(recorded.size(), probes.size(), e.probes());
        boolean set = e.kind().startsWith("set-");
        int n = probes.size();
        byte[][] keys = new byte[n][];
        long[] intKeys = new long[n];
        byte[][] groups = new byte[n][];
        long[] intGroups = new long[n];
        for (int i = 0; i < n; i++) {
            byte[] key = probes.get(i);
            if (set) {
                int tab = indexOf(key, (byte) '\t');
                groups[i] = Arrays.copyOf(key, tab);
                if (e.kind().equals("set-u64")) {
                    intGroups[i] = Long.parseUnsignedLong(new String(groups[i], StandardCharsets.US_ASCII));
                }
                key = Arrays.copyOfRange(key, tab + 1, key.length);
            }
            keys[i] = key;
            if (e.u64Keys()) intKeys[i] = hex(key);
        }
        // The whole file in one window, and windows of 64 bytes (every read crosses some).
        for (RibbonFilter f : List.of(RibbonFilter.open(path), RibbonFilter.open(path, 6))) {
            assertEquals(e.version(), f.formatVersion(), e.file());
            assertEquals(set, f.isSet(), e.file());
            String[] answers = new String[n];
            if (e.kind().equals("filter")) {
                boolean[] batched = e.u64Keys() ? f.contains(intKeys) : f.contains(keys);
                for (int i = 0; i < n; i++) {
                    boolean scalar = e.u64Keys() ? f.contains(intKeys[i]) : f.contains(keys[i]);
                    assertEquals(scalar, batched[i], "batched, probe " + i);
                    answers[i] = scalar ? "1" : "0";
                }
            } else if (e.kind().equals("values")) {
                assertTrue(f.isRetrieval(), e.file());
                int[] batched = e.u64Keys() ? f.lookup(intKeys) : f.lookup(keys);
                for (int i = 0; i < n; i++) {
                    OptionalInt found = e.u64Keys() ? f.find(intKeys[i]) : f.find(keys[i]);
                    int value = e.u64Keys() ? f.lookup(intKeys[i]) : f.lookup(keys[i]);
                    assertEquals(value, batched[i], "batched, probe " + i);
                    if (found.isPresent()) assertEquals(value, found.getAsInt(), "find, probe " + i);
                    if (f.checkBits() > 0) {
                        boolean member = e.u64Keys() ? f.contains(intKeys[i]) : f.contains(keys[i]);
                        assertEquals(found.isPresent(), member, "contains, probe " + i);
                    }
                    answers[i] = found.isPresent() ? Integer.toUnsignedString(found.getAsInt()) : "absent";
                }
            } else {
                boolean intGroup = e.kind().equals("set-u64");
                for (int i = 0; i < n; i++) {
                    boolean present;
                    if (intGroup) {
                        present = e.u64Keys() ? f.containsIn(intGroups[i], intKeys[i]) : f.containsIn(intGroups[i], keys[i]);
                    } else {
                        present = e.u64Keys() ? f.containsIn(groups[i], intKeys[i]) : f.containsIn(groups[i], keys[i]);
                    }
                    answers[i] = present ? "1" : "0";
                }
            }
            int differences = 0;
            String first = "";
            for (int i = 0; i < n; i++) {
                if (!answers[i].equals(recorded.get(i))) {
                    if (differences++ == 0) first = "probe " + i + " answers " + answers[i] + ", recorded " + recorded.get(i);
                }
            }
            assertEquals(0, differences, e.file() + ": " + differences + " answers differ from the recorded ones; " + first);
        }
    }
}
