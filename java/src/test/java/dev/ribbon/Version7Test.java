package dev.ribbon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Format version 7 (docs/format.md, section 12): files written by {@link FileBuilder} from the
 * parts of tests/data's files and from tiny filter sets, each rule of the version table and the
 * features table broken once, the trailing sections, group names and groupsOf, and the
 * check-cases runner.
 */
class Version7Test {
    static final Path DATA = Path.of("tests", "data");
    static final long SEED = 42;
    static final long SEED_MIXED = Hashing.seedMix(SEED);

    @TempDir
    Path dir;
    private int files;

    private Path write(byte[] bytes) throws IOException {
        Path path = dir.resolve("f" + files++ + ".rbn");
        Files.write(path, bytes);
        return path;
    }

    private RibbonFilter open(byte[] bytes) throws IOException {
        return RibbonFilter.open(write(bytes), 6);  // small windows: reads cross them
    }

    /** The file is refused with a message containing {@code fragment}. */
    private void refused(byte[] bytes, String fragment) throws IOException {
        Path path = write(bytes);
        RibbonException e = assertThrows(RibbonException.class, () -> RibbonFilter.open(path));
        assertTrue(e.getMessage().contains(fragment), "expected \"" + fragment + "\" in: " + e.getMessage());
    }

    private static byte[] read(String name) throws IOException {
        return Files.readAllBytes(DATA.resolve(name));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // --- integer and byte-string tiny sets ---

    static final long[] INT_GROUPS = {5, 10, 1000};
    static final long[][] INT_KEYS = {{1, 2, 3}, {2, 4}, {9}};
    /** Names include 7, a group given without keys, and the largest u64 (unsigned order). */
    static final long[] INT_NAMES = {5, 7, 10, 1000, -1L};

    static FileBuilder intSet() {
        List<Long> pairs = new ArrayList<>();
        for (int g = 0; g < INT_GROUPS.length; g++) {
            long gh = Hashing.groupHashLong(INT_GROUPS[g], SEED_MIXED);
            for (long key : INT_KEYS[g]) pairs.add(Hashing.pairHash(gh, Hashing.hashLong(key, SEED_MIXED)));
        }
        return FileBuilder.tinySet(SEED, 0, 1, INT_GROUPS.length, pairs.stream().mapToLong(Long::longValue).toArray());
    }

    static final String[] BYTE_GROUPS = {"apple", "apricot", "banana"};
    static final String[][] BYTE_KEYS = {{"x", "y"}, {"y"}, {"z", "\u00e9t\u00e9"}};
    static final String[] BYTE_NAMES = {"", "apple", "apricot", "banana", "cherry"};

    static FileBuilder byteSet() {
        List<Long> pairs = new ArrayList<>();
        for (int g = 0; g < BYTE_GROUPS.length; g++) {
            long gh = Hashing.groupHashBytes(utf8(BYTE_GROUPS[g]), SEED);
            for (String key : BYTE_KEYS[g]) pairs.add(Hashing.pairHash(gh, Hashing.hashBytes(utf8(key), SEED)));
        }
        return FileBuilder.tinySet(SEED, 1, 2, BYTE_GROUPS.length, pairs.stream().mapToLong(Long::longValue).toArray());
    }

    static byte[][] byteNames(String... names) {
        byte[][] out = new byte[names.length][];
        for (int i = 0; i < names.length; i++) out[i] = utf8(names[i]);
        return out;
    }

    static FileBuilder intSetNamed() {
        FileBuilder p = intSet();
        p.names = FileBuilder.namesPayload(INT_NAMES);
        return p;
    }

    static FileBuilder byteSetNamed() {
        FileBuilder p = byteSet();
        p.names = FileBuilder.namesPayload(byteNames(BYTE_NAMES));
        return p;
    }

    // --- reading version 7 ---

    /** tests/data's standard files as version 7 (features word at offset 12): the same answers. */
    @Test
    void standardFilesReadAsVersion7() throws IOException {
        RibbonFilter v1 = RibbonFilter.open(DATA.resolve("v1_u64_5000_w128_r13.rbn"));
        assertEquals(0, v1.features());
        RibbonFilter v7 = open(FileBuilder.fromStandard(read("v1_u64_5000_w128_r13.rbn")).standard7());
        assertEquals(7, v7.formatVersion());
        assertEquals(0, v7.features());
        long[] keys = new long[20000];
        for (int i = 0; i < keys.length; i++) keys[i] = i * 0x9E3779B97F4A7C15L + (i % 3);
        assertArrayEquals(v1.contains(keys), v7.contains(keys));

        RibbonFilter v4 = RibbonFilter.open(DATA.resolve("v4_values_3000_c6.rbn"));
        FileBuilder parts = FileBuilder.fromStandard(read("v4_values_3000_c6.rbn"));
        int expected = VersionRules.CHECK_BITS | (parts.encoding == 2 ? VersionRules.ONE_PLUS_BIT_CODES : 0);
        assertEquals(expected, v4.features());
        RibbonFilter checked = open(parts.standard7());
        assertEquals(expected, checked.features());
        assertEquals(6, checked.checkBits());
        byte[][] texts = new byte[6000][];
        for (int i = 0; i < texts.length; i++) texts[i] = utf8(Integer.toString(i));
        for (byte[] t : texts) {
            OptionalInt a = v4.hasByteKeys() ? v4.find(t) : v4.find(Long.parseLong(new String(t, StandardCharsets.UTF_8)));
            OptionalInt b = v4.hasByteKeys() ? checked.find(t) : checked.find(Long.parseLong(new String(t, StandardCharsets.UTF_8)));
            assertEquals(a, b);
        }
        assertEquals(0, Main.verify(new String[] {write(parts.standard7()).toString()}));
    }

    /** A standard file written compact (version 5 and 7) and tests/data's version-5 file moved
     *  into version 7's 72-byte header: the same answers. */
    @Test
    void compactFilesReadAsVersion7() throws IOException {
        RibbonFilter v1 = RibbonFilter.open(DATA.resolve("v1_lines_3000.rbn"));
        FileBuilder parts = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        RibbonFilter v5 = open(parts.compact(5, 0));
        RibbonFilter v7 = open(parts.compact7());
        assertEquals(VersionRules.COMPACT, v5.features());
        assertEquals(VersionRules.COMPACT, v7.features());
        assertEquals(7, v7.formatVersion());
        byte[][] texts = new byte[20000][];
        for (int i = 0; i < texts.length; i++) texts[i] = utf8(Integer.toString(i + 1));
        boolean[] expected = v1.contains(texts);
        assertArrayEquals(expected, v5.contains(texts));
        assertArrayEquals(expected, v7.contains(texts));

        byte[] real = read("v5_lines_3000.rbn");
        RibbonFilter original = RibbonFilter.open(DATA.resolve("v5_lines_3000.rbn"));
        byte[] moved = v5ToV7(real);
        RibbonFilter relocated = open(moved);
        assertEquals(original.features(), relocated.features());
        assertArrayEquals(original.contains(texts), relocated.contains(texts));
        moved[41] ^= 1;  // the checksum
        refused(moved, "checksum mismatch");
    }

    /** A version-5 file's header rewritten as version 7's (sections shift by 16: still aligned). */
    static byte[] v5ToV7(byte[] v5) {
        ByteBuffer in = ByteBuffer.wrap(v5).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = ByteBuffer.allocate(v5.length + 16).order(ByteOrder.LITTLE_ENDIAN);
        out.put(v5, 0, 8).putInt(8, 7);
        int features = VersionRules.COMPACT | (v5[53] == 2 ? VersionRules.ONE_PLUS_BIT_CODES : 0)
                | (v5[50] != 0 ? VersionRules.CHECK_BITS : 0);
        out.putInt(12, features);
        out.put(16, v5[12]).put(17, v5[13]).put(18, v5[14]).put(19, v5[15]);
        out.putInt(20, in.getInt(40)).putLong(24, in.getLong(16)).putLong(32, in.getLong(24));
        out.putInt(48, in.getInt(44)).putShort(52, in.getShort(48));
        for (int i = 0; i < 5; i++) out.put(54 + i, v5[50 + i]);
        System.arraycopy(v5, 56, out.array(), 72, v5.length - 56);
        int n = v5[54];
        ByteBuffer covered = ByteBuffer.allocate(72 + 24 * n + 16 * n).order(ByteOrder.LITTLE_ENDIAN);
        covered.put(out.array(), 0, 72 + 24 * n);
        // Per layer the section checksums, at the sizes the reader computes for the original.
        byte[] bytes = out.array();
        long offset = 72 + 24 * n;
        for (int l = 0; l < n; l++) {
            long[] sizes = sectionSizes(v5, l);
            if (sizes[0] != 0) {
                offset = FileBuilder.alignUp(offset, 16);
                covered.putLong(Hashing.XXH64.hash(bytes, (int) offset, (int) sizes[0], 0));
                offset += sizes[0];
            } else {
                covered.putLong(Hashing.XXH64.hash(bytes, 0, 0, 0));
            }
            offset = FileBuilder.alignUp(offset, 16);
            covered.putLong(Hashing.XXH64.hash(bytes, (int) offset, (int) sizes[1], 0));
            offset += sizes[1];
        }
        out.putLong(40, Hashing.XXH64.hash(covered.array(), 0, covered.capacity(), 0));
        return bytes;
    }

    /** A v5 file's layer sizes {threshold, solution}, as the reader computes them. */
    private static long[] sectionSizes(byte[] v5, int l) {
        try {
            Path tmp = Files.createTempFile("v5", ".rbn");
            Files.write(tmp, v5);
            MappedFile f = MappedFile.map(tmp, MappedFile.DEFAULT_CHUNK_BITS);
            FileParser parsed = FileParser.parse(f, "v5");
            Files.delete(tmp);
            return new long[] {parsed.layers[l].thresholdBytes(), parsed.layers[l].solutionBytes()};
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    // --- the features word ---

    @Test
    void unknownFeatureBitsAreNamed() throws IOException {
        FileBuilder parts = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        for (int bit = 6; bit < 32; bit++) {
            String message = "needs feature bit " + bit + ", which this reader does not know; upgrade ribbon";
            refused(parts.standard(7, parts.features(false) | 1 << bit), message);
            refused(parts.compact(7, parts.features(true) | 1 << bit), message);
        }
        // Too short to hold the features word: truncated, not read past the end.
        refused(java.util.Arrays.copyOf(parts.standard7(), 14), "truncated");
    }

    /** The bits agree with the fields they describe: encoding, check_bits, group_kind. */
    @Test
    void featureBitsAgreeWithTheFields() throws IOException {
        FileBuilder filter = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        refused(filter.standard(7, VersionRules.ONE_PLUS_BIT_CODES), "feature one_plus_bit_codes is set");
        refused(filter.compact(7, VersionRules.COMPACT | VersionRules.ONE_PLUS_BIT_CODES), "feature one_plus_bit_codes is set");
        FileBuilder values = FileBuilder.fromStandard(read("v4_values_3000_c6.rbn"));
        int valueFeatures = values.features(false);
        refused(values.standard(7, valueFeatures & ~VersionRules.CHECK_BITS), "feature check_bits is clear");
        refused(values.standard(7, valueFeatures ^ VersionRules.ONE_PLUS_BIT_CODES), "feature one_plus_bit_codes");
        refused(values.compact(7, values.features(true) & ~VersionRules.CHECK_BITS), "feature check_bits is clear");
        FileBuilder set = intSet();
        refused(set.standard(7, 0), "feature filter_set is clear");
        refused(set.compact(7, VersionRules.COMPACT), "feature filter_set is clear");
        refused(filter.standard(7, VersionRules.FILTER_SET), "feature filter_set is set");
        // The features the fields describe: accepted.
        assertEquals(VersionRules.FILTER_SET, open(set.standard7()).features());
        assertEquals(VersionRules.FILTER_SET | VersionRules.COMPACT, open(set.compact7()).features());
    }

    /** The rules column of the features table. */
    @Test
    void featureCombinationsTheTableForbids() throws IOException {
        // group_names needs filter_set.
        FileBuilder filter = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        filter.names = FileBuilder.namesPayload(1L, 2L);
        refused(filter.standard7(), "group_names needs filter_set");
        refused(filter.compact7(), "group_names needs filter_set");
        // check_bits not with filter_set (a set with check bits: a retrieval variant made a set).
        FileBuilder values = FileBuilder.fromStandard(read("v4_values_3000_c6.rbn"));
        values.groupKind = 1;
        values.groupCount = 1;
        refused(values.standard7(), "check_bits is not allowed with filter_set");
        // check_bits needs a retrieval variant.
        FileBuilder checkedFilter = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        checkedFilter.checkBits = 3;
        refused(checkedFilter.standard7(), "check_bits needs a retrieval variant");
        refused(checkedFilter.compact7(), "check_bits needs a retrieval variant");
        // filter_set needs a filter variant.
        FileBuilder retrievalSet = FileBuilder.fromStandard(read("v4_values_3000_c6.rbn"));
        retrievalSet.checkBits = 0;
        retrievalSet.groupKind = 2;
        retrievalSet.groupCount = 1;
        refused(retrievalSet.standard7(), "filter_set needs a filter variant");
    }

    /** A copy of tests/data's version-1 lines file's parts (variant 0, 2-bit codes), edited. */
    private static FileBuilder v1With(java.util.function.Consumer<FileBuilder> edit) throws IOException {
        FileBuilder p = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        edit.accept(p);
        return p;
    }

    /** Each row of the version table: a feature the version may not need, one it must need. */
    @Test
    void versionRowsAdmitOnlyTheirFeatures() throws IOException {
        FileBuilder v1 = v1With(p -> { });
        FileBuilder v4 = FileBuilder.fromStandard(read("v4_values_3000_c6.rbn"));  // retrieval, check bits
        assertEquals(1, open(v1.standard(1, 0)).formatVersion());
        assertEquals(2, open(v1.standard(2, 0)).formatVersion());
        // Versions 1 and 2: no 1+-bit codes, no check bits, no set.
        for (int version : new int[] {1, 2}) {
            String no = "format version " + version + " cannot have feature ";
            refused(v1With(p -> p.encoding = 2).standard(version, 0), no + "one_plus_bit_codes");
            refused(v1With(p -> p.checkBits = 1).standard(version, 0), no + "check_bits");
            refused(v1With(p -> { p.groupKind = 1; p.groupCount = 1; }).standard(version, 0), no + "filter_set");
        }
        // Version 3: needs 1+-bit codes; may not have check bits or a set.
        FileBuilder onePlus = intSet();  // one plain layer: either encoding
        onePlus.groupKind = 0;
        onePlus.groupCount = 0;
        onePlus.encoding = 2;
        assertEquals(3, open(onePlus.standard(3, 0)).formatVersion());
        refused(v1.standard(3, 0), "format version 3 needs feature one_plus_bit_codes");
        refused(v4.standard(3, 0), "format version 3 cannot have feature check_bits");
        FileBuilder set = intSet();
        set.encoding = 2;
        refused(set.standard(3, 0), "format version 3 cannot have feature filter_set");
        // Version 4: needs check bits; either encoding; not a set.
        refused(v1.standard(4, 0), "format version 4 needs feature check_bits");
        assertEquals(4, open(v4.standard(4, 0)).formatVersion());
        refused(set.standard(4, 0), "format version 4 cannot have feature filter_set");
        // Version 5 (compact): either encoding, check bits or not (its header has no set fields).
        assertEquals(5, open(v4.compact(5, 0)).formatVersion());
        assertEquals(5, open(onePlus.compact(5, 0)).formatVersion());
        // Version 6: needs a set; either encoding; not check bits.
        assertEquals(6, open(set.standard(6, 0)).formatVersion());
        set.encoding = 1;
        assertEquals(6, open(set.standard(6, 0)).formatVersion());
        refused(v1.standard(6, 0), "format version 6 needs feature filter_set");
        refused(v4.standard(6, 0), "format version 6 cannot have feature check_bits");
        // Version 1's other rules: variant 0, no fractional bits.
        FileBuilder standardVariant = intSet();
        standardVariant.groupKind = 0;
        standardVariant.groupCount = 0;
        refused(standardVariant.standard(1, 0), "unknown filter variant 1");
        assertEquals(2, open(standardVariant.standard(2, 0)).formatVersion());
        refused(v1With(p -> p.fraction = 1).standard(1, 0), "reserved header fields");
        // Version 7 admits every combination of known features its rules allow.
        FileBuilder all = intSetNamed();
        all.metadata = utf8("{}");
        all.encoding = 2;
        int features = VersionRules.COMPACT | VersionRules.ONE_PLUS_BIT_CODES | VersionRules.FILTER_SET
                | VersionRules.GROUP_NAMES | VersionRules.METADATA;
        assertEquals(features, open(all.compact7()).features());
        assertEquals(features & ~VersionRules.COMPACT, open(all.standard7()).features());
        // Every version outside the table.
        refused(v1.standard(8, 0), "unsupported format version 8 (this library reads versions 1 to 7)");
        refused(v1.standard(0, 0), "unsupported format version 0");
    }

    /** A version-7 standard header keeps header_bytes' place for the features: 128 there is bit 7. */
    @Test
    void version7HasNoHeaderBytesField() throws IOException {
        FileBuilder v1 = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        refused(v1.standard(7, 128), "needs feature bit 7");
        byte[] v2 = v1.standard(2, 0);
        ByteBuffer.wrap(v2).order(ByteOrder.LITTLE_ENDIAN).putInt(12, 0)
                .putLong(120, Hashing.XXH64.hash(v2, 0, 120, 0));
        refused(v2, "inconsistent header or descriptor size");
    }

    /** Group fields: only a set has them; a set has no more groups than keys, and groups exactly
     *  when it has keys; version 7's compact header keeps its reserved word zero. */
    @Test
    void groupFieldsAndReservedWords() throws IOException {
        FileBuilder filter = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        filter.groupCount = 3;
        refused(filter.standard7(), "a group count, but no group kind");
        refused(filter.compact7(), "a group count, but no group kind");
        FileBuilder set = intSet();
        set.groupCount = set.keyCount + 1;
        refused(set.standard7(), "inconsistent group count");
        refused(set.compact7(), "inconsistent group count");
        set.groupCount = 0;
        refused(set.compact7(), "inconsistent group count");
        FileBuilder kind = intSet();
        kind.groupKind = 3;
        refused(kind.standard(7, VersionRules.FILTER_SET), "unknown group kind 3");
        refused(kind.compact(7, VersionRules.FILTER_SET | VersionRules.COMPACT), "unknown group kind 3");
        byte[] compact = intSet().compact7();
        compact[62] = 1;  // reserved u32 at 60
        refused(recomputeCompactChecksum(compact), "reserved header fields");
    }

    /** The compact checksum of a version-7 file whose header a test edited (no layers' sections
     *  moved): XXH64 of header and descriptors, then the sections' checksums. */
    static byte[] recomputeCompactChecksum(byte[] file) {
        Path tmp;
        try {
            tmp = Files.createTempFile("c7", ".rbn");
            Files.write(tmp, file);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        // Layer offsets from the reader's layout of an untouched copy of the same geometry.
        byte[] clean = file.clone();
        clean[60] = clean[61] = clean[62] = clean[63] = 0;
        int n = file[58];
        ByteBuffer covered = ByteBuffer.allocate(72 + 40 * n).order(ByteOrder.LITTLE_ENDIAN);
        covered.put(file, 0, 72 + 24 * n).putLong(40, 0);
        covered.position(72 + 24 * n);
        try {
            Files.write(tmp, clean);
            FileParser parsed = FileParser.parse(MappedFile.map(tmp, MappedFile.DEFAULT_CHUNK_BITS), "clean");
            for (Layer layer : parsed.layers) {
                covered.putLong(Hashing.XXH64.hash(file, (int) layer.thresholdOffset, (int) layer.thresholdBytes(), 0));
                covered.putLong(Hashing.XXH64.hash(file, (int) layer.solutionOffset, (int) layer.solutionBytes(), 0));
            }
            Files.delete(tmp);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        byte[] out = file.clone();
        ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN).putLong(40, Hashing.XXH64.hash(covered.array(), 0, covered.capacity(), 0));
        return out;
    }

    // --- trailing sections ---

    @Test
    void namesAndMetadataRoundTrip() throws IOException {
        for (boolean compact : new boolean[] {false, true}) {
            FileBuilder ints = intSetNamed();
            ints.metadata = utf8("{\"source\": \"test\"}");
            RibbonFilter f = open(compact ? ints.compact7() : ints.standard7());
            assertTrue(f.hasGroupNames());
            assertArrayEquals(INT_NAMES, f.groupsLong());
            assertArrayEquals(ints.metadata, f.metadata());
            assertEquals(3, f.groupCount());
            FileBuilder bytes = byteSetNamed();
            RibbonFilter b = open(compact ? bytes.compact7() : bytes.standard7());
            assertArrayEquals(byteNames(BYTE_NAMES), b.groupsBytes());
            assertNull(b.metadata());
            assertThrows(RibbonException.class, b::groupsLong);
            assertThrows(RibbonException.class, f::groupsBytes);
            // Metadata on a plain filter, and an empty metadata payload.
            FileBuilder filter = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
            filter.metadata = new byte[0];
            RibbonFilter plain = open(compact ? filter.compact7() : filter.standard7());
            assertArrayEquals(new byte[0], plain.metadata());
            assertFalse(plain.hasGroupNames());
            assertThrows(RibbonException.class, plain::groupsLong);
        }
        // A set of no keys and no groups still names the groups it was given.
        FileBuilder empty = FileBuilder.tinySet(SEED, 0, 1, 0, new long[0]);
        empty.layers.clear();
        empty.names = FileBuilder.namesPayload(3L, 4L);
        RibbonFilter e = open(empty.standard7());
        assertArrayEquals(new long[] {3, 4}, e.groupsLong());
        assertArrayEquals(new int[][] {{}}, e.groupsOf(new long[] {1}));
        assertArrayEquals(new long[] {3, 4}, open(empty.compact7()).groupsLong());
    }

    @Test
    void trailingSectionsLieWhereTheLayoutPutsThem() throws IOException {
        for (boolean compact : new boolean[] {false, true}) {
            FileBuilder set = intSetNamed();
            set.metadata = utf8("meta");
            byte[] good = compact ? set.compact7() : set.standard7();
            open(good);
            // A feature's section missing: the file ends first.
            int features = set.features(compact);
            FileBuilder noMeta = intSetNamed();
            byte[] missing = compact ? noMeta.compact(7, features) : noMeta.standard(7, features);
            refused(missing, "truncated");
            // A section without its feature: trailing bytes.
            refused(compact ? set.compact(7, features & ~VersionRules.METADATA)
                            : set.standard(7, features & ~VersionRules.METADATA),
                    compact ? "trailing bytes" : "section sizes do not add up");
            // A byte after the last section.
            byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
            if (!compact) ByteBuffer.wrap(longer).order(ByteOrder.LITTLE_ENDIAN).putLong(16, longer.length)
                    .putLong(120, Hashing.XXH64.hash(longer, 0, 120, 0));
            refused(longer, compact ? "trailing bytes" : "section sizes do not add up");
            // A payload's checksum, and its size.
            byte[] flipped = good.clone();
            flipped[flipped.length - 1] ^= 1;
            refused(flipped, "metadata section checksum mismatch");
            int metaFrame = good.length - 16 - 4;
            byte[] bigger = good.clone();
            bigger[metaFrame] = 5;
            refused(bigger, "truncated");
            // A non-zero byte in the gap before the metadata.
            FileBuilder gap = intSetNamed();
            gap.metadata = utf8("meta");
            gap.gapByte = 7;
            refused(compact ? gap.compact7() : gap.standard7(), "non-zero padding");
            // The names' payload checksum.
            FileBuilder namesSet = intSetNamed();
            byte[] named = compact ? namesSet.compact7() : namesSet.standard7();
            named[named.length - 1] ^= 1;
            refused(named, "group names section checksum mismatch");
        }
        // A section starts at the next multiple of the alignment, not right where the one before
        // ends: the metadata frame moved back over the gap after the names (23 bytes of payload).
        for (boolean compact : new boolean[] {false, true}) {
            FileBuilder set = intSetNamed();
            set.metadata = utf8("meta");
            byte[] good = compact ? set.compact7() : set.standard7();
            int frame = good.length - 16 - 4;
            int namesEnd = namesEnd(good, set.names.length);
            assertTrue(frame > namesEnd, "a gap before the metadata");
            byte[] moved = new byte[good.length - (frame - namesEnd)];
            System.arraycopy(good, 0, moved, 0, namesEnd);
            System.arraycopy(good, frame, moved, namesEnd, good.length - frame);
            if (!compact) ByteBuffer.wrap(moved).order(ByteOrder.LITTLE_ENDIAN).putLong(16, moved.length)
                    .putLong(120, Hashing.XXH64.hash(moved, 0, 120, 0));
            Path path = write(moved);
            assertThrows(RibbonException.class, () -> RibbonFilter.open(path));
        }
    }

    /** Where the names payload (the first trailing section, `bytes` long) ends in `file`. */
    private static int namesEnd(byte[] file, int bytes) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at + 16 <= file.length; at += 16) {
            if (b.getLong(at) == bytes && b.getLong(at + 8) == Hashing.XXH64.hash(file, at + 16, bytes, 0)) {
                return at + 16 + bytes;
            }
        }
        throw new AssertionError("no names frame");
    }

    // --- group names payloads ---

    private void namesRefused(byte[] payload, String fragment) throws IOException {
        FileBuilder set = intSet();
        set.names = payload;
        refused(set.standard7(), fragment);
        refused(set.compact7(), fragment);
    }

    private void byteNamesRefused(byte[] payload, String fragment) throws IOException {
        FileBuilder set = byteSet();
        set.names = payload;
        refused(set.standard7(), fragment);
    }

    private long[] namesRead(byte[] payload) throws IOException {
        FileBuilder set = intSet();
        set.names = payload;
        return open(set.standard7()).groupsLong();
    }

    @Test
    void integerNamesAreCanonical() throws IOException {
        byte[] three = FileBuilder.le64(3);
        assertArrayEquals(new long[] {5, 10, 1000}, namesRead(FileBuilder.namesPayload(5L, 10L, 1000L)));
        // Deltas of at least 1.
        namesRefused(FileBuilder.concat(three, FileBuilder.bytes(5, 5, 0)), "not strictly ascending");
        // No superfluous zero byte (5 as 0x85 0x00).
        namesRefused(FileBuilder.concat(three, FileBuilder.bytes(0x85, 0x00, 5, 1)), "superfluous zero byte");
        // At most 10 bytes and 64 bits.
        byte[] eleven = FileBuilder.bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x01);
        namesRefused(FileBuilder.concat(FileBuilder.le64(3), FileBuilder.bytes(1, 1), eleven), "more than 64 bits");
        byte[] over64 = FileBuilder.bytes(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02);
        namesRefused(FileBuilder.concat(FileBuilder.le64(3), FileBuilder.bytes(1, 1), over64), "more than 64 bits");
        // The largest name: 10 bytes ending in 0x01; past it the names wrap.
        assertArrayEquals(new long[] {1, 2, -1L}, namesRead(FileBuilder.namesPayload(1L, 2L, -1L)));
        byte[] max = FileBuilder.bytes(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01);  // 2^64 - 1
        namesRefused(FileBuilder.concat(three, FileBuilder.bytes(1, 1), max), "past 2^64 - 1");
        // The payload's end: nothing after the last name, and no name past it.
        namesRefused(FileBuilder.concat(FileBuilder.namesPayload(5L, 10L, 1000L), FileBuilder.bytes(0)), "after the last name");
        namesRefused(FileBuilder.concat(FileBuilder.le64(4), FileBuilder.bytes(1, 2, 3)), "4 names in 3 bytes");
        namesRefused(FileBuilder.concat(FileBuilder.le64(3), FileBuilder.bytes(1, 2, 0x83)), "truncated");
        namesRefused(FileBuilder.bytes(3, 0, 0), "truncated");
        namesRefused(FileBuilder.le64(-1L), "names in 0 bytes");
        // At least group_count names (3 groups hold keys).
        namesRefused(FileBuilder.namesPayload(5L, 10L), "2 names for 3 groups");
    }

    @Test
    void byteStringNamesAreCanonical() throws IOException {
        FileBuilder ok = byteSet();
        ok.names = FileBuilder.namesPayload(byteNames("a", "ab", "b"));
        assertArrayEquals(byteNames("a", "ab", "b"), open(ok.standard7()).groupsBytes());
        // Unsigned byte order: 0x7F before 0x80.
        ok.names = FileBuilder.namesPayload(new byte[] {0x7F}, new byte[] {(byte) 0x80}, new byte[] {(byte) 0x80, 0});
        assertArrayEquals(new byte[][] {{0x7F}, {(byte) 0x80}, {(byte) 0x80, 0}}, open(ok.standard7()).groupsBytes());
        byte[] three = FileBuilder.le64(3);
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 0x80, 0, 1, 0x7F, 0, 1, 0x7E)), "not strictly ascending");
        // "a", "ab", then "ac" stated as sharing 0 bytes: canonical is 1.
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 'a', 1, 1, 'b', 0, 2, 'a', 'c')), "not canonical");
        // "a", "ab", then "ac" sharing 1, but "ab" and "ac" stated as "a" + "c" after "ab"? the
        // suffix starting with the previous name's byte: shares more than stated.
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 'a', 0, 2, 'a', 'b', 1, 1, 'c')), "not canonical");
        // Repeats and prefixes of the name before.
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 'a', 1, 0, 0, 1, 'b')), "repeats");
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 2, 'a', 'b', 1, 0, 0, 1, 'c')), "is a prefix");
        // The first name shares nothing; no name shares more than the one before it has.
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(1, 1, 'a', 1, 1, 'b', 0, 1, 'c')), "first name");
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 'a', 2, 1, 'b', 0, 1, 'c')), "shares 2 bytes of a name of 1");
        // A suffix past the payload.
        byteNamesRefused(FileBuilder.concat(three, FileBuilder.bytes(0, 1, 'a', 0, 1, 'b', 0, 9, 'c')), "truncated");
        // The empty name is a name (the smallest).
        ok.names = FileBuilder.namesPayload(byteNames("", "x", "y"));
        assertArrayEquals(byteNames("", "x", "y"), open(ok.standard7()).groupsBytes());
    }

    // --- groupsOf ---

    @Test
    void groupsOfListsEveryGroupThatMayHoldTheKey() throws IOException {
        for (boolean compact : new boolean[] {false, true}) {
            FileBuilder ints = intSetNamed();
            RibbonFilter f = open(compact ? ints.compact7() : ints.standard7());
            long[] keys = new long[2000];
            for (int i = 0; i < keys.length; i++) keys[i] = i;
            int[][] groups = f.groupsOf(keys);
            long[] names = f.groupsLong();
            for (int i = 0; i < keys.length; i++) {
                List<Integer> expected = new ArrayList<>();
                for (int g = 0; g < names.length; g++) if (f.containsIn(names[g], keys[i])) expected.add(g);
                assertArrayEquals(expected.stream().mapToInt(Integer::intValue).toArray(), groups[i], "key " + i);
            }
            // Members: 2 is in groups 5 and 10 (indices 0 and 2), 9 in 1000 (index 3).
            assertArrayEquals(new int[] {0, 2}, groups[2]);
            assertArrayEquals(new int[] {3}, groups[9]);
            assertArrayEquals(new int[] {0}, groups[1]);
            for (int g = 0; g < INT_GROUPS.length; g++) {
                for (long key : INT_KEYS[g]) assertTrue(f.containsIn(INT_GROUPS[g], key));
            }
            assertArrayEquals(new int[0][], f.groupsOf(new long[0]));
            assertThrows(RibbonException.class, () -> f.groupsOf(new byte[][] {utf8("1")}));

            FileBuilder bytes = byteSetNamed();
            RibbonFilter b = open(compact ? bytes.compact7() : bytes.standard7());
            int[][] byteGroups = b.groupsOf(byteNames("x", "y", "z", "\u00e9t\u00e9", "w"));
            assertArrayEquals(new int[] {1}, byteGroups[0]);  // apple
            assertArrayEquals(new int[] {1, 2}, byteGroups[1]);  // apple, apricot
            assertArrayEquals(new int[] {3}, byteGroups[2]);  // banana
            assertArrayEquals(new int[] {3}, byteGroups[3]);
            assertArrayEquals(new int[0], byteGroups[4]);
        }
    }

    @Test
    void groupsOfNeedsASetWithNames() throws IOException {
        RibbonFilter v6 = open(intSet().standard(6, 0));
        assertFalse(v6.hasGroupNames());
        RibbonException e = assertThrows(RibbonException.class, () -> v6.groupsOf(new long[] {1}));
        assertTrue(e.getMessage().contains("has no group names"), e.getMessage());
        assertThrows(RibbonException.class, v6::groupsLong);
        RibbonFilter unnamed7 = open(intSet().standard7());
        assertThrows(RibbonException.class, () -> unnamed7.groupsOf(new long[] {1}));
        RibbonFilter filter = RibbonFilter.open(DATA.resolve("v1_lines_3000.rbn"));
        e = assertThrows(RibbonException.class, () -> filter.groupsOf(new byte[][] {utf8("1")}));
        assertTrue(e.getMessage().contains("not a filter set"), e.getMessage());
    }

    // --- the query command and check-cases ---

    private static String query(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = QueryCommand.run(args, out, new PrintStream(err, true, StandardCharsets.UTF_8));
        return status + "|" + out.toString(StandardCharsets.UTF_8) + "|" + err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void queryGroupsOfPrintsAGroupListPerKey() throws IOException {
        String ints = write(intSetNamed().standard7()).toString();
        assertEquals("0|2\t5\t10\n9\t1000\n100000\n|", query(ints, "--format", "u64", "--groups-of", "2", "9", "100000"));
        assertEquals("1|100000\n|", query(ints, "--format", "u64", "--groups-of", "100000"));
        String bytes = write(byteSetNamed().compact7()).toString();
        assertEquals("0|y\tapple\tapricot\nw\n|", query(bytes, "--groups-of", "y", "w"));
        String v6 = write(intSet().standard(6, 0)).toString();
        String refused = query(v6, "--format", "u64", "--groups-of", "2");
        assertTrue(refused.startsWith("2||ribbon: ") && refused.contains("group names"), refused);
        assertTrue(query(ints, "--format", "u64", "--groups-of", "--group", "5", "2").startsWith("2||ribbon: --groups-of excludes"));
    }

    @Test
    void checkCasesComparesDecisions() throws IOException {
        Path corpus = dir.resolve("corpus");
        Files.createDirectories(corpus);
        Files.write(corpus.resolve("good.rbn"), intSetNamed().standard7());
        FileBuilder bad = FileBuilder.fromStandard(read("v1_lines_3000.rbn"));
        Files.write(corpus.resolve("bad.rbn"), bad.standard(7, 1 << 9));
        Files.writeString(corpus.resolve("cases.tsv"), "# file\tdecision\trule\ngood.rbn\taccept\tvalid\n"
                + "bad.rbn\treject\tunknown_feature_bit\n");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, CheckCases.run(new String[] {corpus.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8)));
        Files.writeString(corpus.resolve("cases.tsv"), "good.rbn\treject\tvalid\nbad.rbn\taccept\tunknown_feature_bit\n");
        out.reset();
        assertEquals(1, CheckCases.run(new String[] {corpus.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8)));
        String printed = out.toString(StandardCharsets.UTF_8);
        assertTrue(printed.contains("MISMATCH good.rbn valid: expected reject"), printed);
        assertTrue(printed.contains("MISMATCH bad.rbn unknown_feature_bit: expected accept"), printed);
        Files.writeString(corpus.resolve("cases.tsv"), "good.rbn\tmaybe\tvalid\n");
        assertEquals(2, CheckCases.run(new String[] {corpus.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8)));
    }
}
