package dev.ribbon;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Validates a mapped file as the C++ reader does (docs/format.md, sections 2 to 10), in the same
 * order, and builds its layers. Every failure is a RibbonException naming the file.
 */
final class FileParser {
    static final int HEADER_BYTES = 128;
    static final int DESCRIPTOR_BYTES = 128;
    static final int COMPACT_HEADER_BYTES = 56;
    static final int COMPACT_DESCRIPTOR_BYTES = 24;
    static final int MAX_LAYERS = 16;
    static final int OLDEST_VERSION = 1;
    static final int COMPACT_VERSION = 5;
    static final int SET_VERSION = 6;
    static final int CURRENT_VERSION = 6;

    private final MappedFile f;
    private final String source;
    private final long size;
    int version;
    FilterParams params;
    long keyCount;
    /** Filter sets: distinct groups (0 for other files). */
    long groupCount;
    Layer[] layers;

    private FileParser(MappedFile f, String source) {
        this.f = f;
        this.source = source;
        this.size = f.size();
    }

    static FileParser parse(MappedFile f, String source) {
        FileParser parser = new FileParser(f, source);
        parser.readVersion();
        if (parser.compact()) {
            parser.readCompactHeader();
            parser.readCompactLayers();
        } else {
            parser.readHeader();
            parser.readLayers();
        }
        parser.checkSections();
        for (Layer layer : parser.layers) {
            if (layer.regions != null) new CodeRegionChecker(f, layer, parser::fail).check();
        }
        return parser;
    }

    RibbonException fail(String what) {
        return new RibbonException(source + ": " + what);
    }

    boolean compact() {
        return version == COMPACT_VERSION;
    }

    /** The magic, then the version, which says which layout the rest has. */
    private void readVersion() {
        if (size < 12) throw fail("truncated: " + size + " bytes, too short for a ribbon filter header");
        byte[] magic = new byte[8];
        for (int i = 0; i < 8; i++) magic[i] = f.getByte(i);
        if (!new String(magic, StandardCharsets.ISO_8859_1).equals("RIBBONFL")) {
            throw fail("not a ribbon filter (bad magic)");
        }
        version = f.getInt(8);
        if (version < OLDEST_VERSION || version > CURRENT_VERSION) {
            throw fail("unsupported format version " + Integer.toUnsignedString(version)
                    + " (this library reads versions 1 to 6)");
        }
    }

    private int u8(long offset) {
        return f.getByte(offset) & 0xFF;
    }

    /** A compact header (section 10): the fields that need no parameters, then the parameters. */
    private void readCompactHeader() {
        if (size < COMPACT_HEADER_BYTES) {
            throw fail("truncated: " + size + " bytes, too short for a compact ribbon filter header (56 bytes)");
        }
        Variant variant = Variant.of(u8(12));
        if (variant == null) throw fail("unknown filter variant " + u8(12));
        if (u8(55) != 0) throw fail("reserved header fields are not zero");
        if (u8(53) != 1 && u8(53) != 2) throw fail("unknown threshold encoding " + u8(53));
        if (u8(51) > 16 || u8(52) > 31) throw fail("bad parameters: bucket or shard size");
        params = FilterParams.compact(f, variant);
        keyCount = f.getLong(24);
    }

    private void readCompactLayers() {
        int n = u8(54);
        if (n > MAX_LAYERS) throw fail("too many layers: " + n);
        if (COMPACT_HEADER_BYTES + (long) n * COMPACT_DESCRIPTOR_BYTES > size) {
            throw fail("truncated layer descriptors");
        }
        for (int l = 0; l < n; l++) {
            long d = COMPACT_HEADER_BYTES + (long) l * COMPACT_DESCRIPTOR_BYTES;
            if (u8(d + 21) != 0 || u8(d + 22) != 0 || u8(d + 23) != 0) {
                throw fail("layer " + l + ": reserved fields are not zero");
            }
        }
        String problem = params.problem();
        if (problem != null) throw fail("bad parameters: " + problem);
        layers = new Layer[n];
        long input = keyCount;
        for (int l = 0; l < n; l++) {
            long d = COMPACT_HEADER_BYTES + (long) l * COMPACT_DESCRIPTOR_BYTES;
            int kind = u8(d + 20);
            int shardBits = kind == Layer.KIND_PLAIN ? 63 : u8(52);
            long bumped = f.getLong(d + 8);
            layers[l] = checkedLayer(l, Integer.toUnsignedLong(f.getInt(d + 16)), shardBits, kind,
                    f.getLong(d), input, input, bumped);
            input = bumped;
        }
        if (input != 0) throw fail("keys bumped out of the last layer");
    }

    /** A standard header (section 2). */
    private void readHeader() {
        if (size < HEADER_BYTES) {
            throw fail("truncated: " + size + " bytes, too short for a ribbon filter header (128 bytes)");
        }
        if (f.getLong(120) != f.checksum(0, 120)) throw fail("header checksum mismatch (corrupt file)");
        if (f.getInt(12) != HEADER_BYTES || f.getInt(84) != DESCRIPTOR_BYTES) {
            throw fail("inconsistent header or descriptor size");
        }
        long fileBytes = f.getLong(16);
        if (fileBytes != size) {
            throw fail((Long.compareUnsigned(size, fileBytes) < 0 ? "truncated: " : "trailing bytes: ")
                    + size + " bytes, header says " + Long.toUnsignedString(fileBytes));
        }
        Variant variant = Variant.of(f.getInt(24));
        if (variant == null || (version == 1 && variant != Variant.BUMPED)) {
            throw fail("unknown filter variant " + Integer.toUnsignedString(f.getInt(24)));
        }
        boolean set = version == SET_VERSION;
        if ((version != 4 && f.getInt(100) != 0) || (version == 1 && f.getInt(96) != 0)
                || (!set && (f.getLong(104) != 0 || f.getInt(112) != 0)) || f.getInt(116) != 0) {
            throw fail("reserved header fields are not zero");
        }
        if (set) checkSetHeader();
        if (version == 4 && f.getInt(100) == 0) {
            throw fail("format version 4 without check bits (files without them are versions 1-3)");
        }
        int encoding = f.getInt(52);
        if (!((encoding == 1 && (version <= 2 || version == 4 || set)) || (encoding == 2 && version >= 3))) {
            throw fail("unknown threshold encoding " + Integer.toUnsignedString(encoding)
                    + " for format version " + version);
        }
        params = FilterParams.standard(f, variant);
        String problem = params.problem();
        if (problem != null) throw fail("bad parameters: " + problem);
        keyCount = f.getLong(72);
        groupCount = f.getLong(104);
    }

    /** A filter set's fields (section 11): a known group kind, no more groups than keys, and
     *  groups exactly when there are keys. */
    private void checkSetHeader() {
        int kind = f.getInt(112);
        if (kind != 1 && kind != 2) {
            throw fail("format version 6 (a filter set) with an unknown group kind " + Integer.toUnsignedString(kind));
        }
        long groups = f.getLong(104), keys = f.getLong(72);
        if (Long.compareUnsigned(groups, keys) > 0 || (groups == 0) != (keys == 0)) {
            throw fail("inconsistent group count: " + Long.toUnsignedString(groups) + " groups for "
                    + Long.toUnsignedString(keys) + " keys");
        }
    }

    private void readLayers() {
        long n = Integer.toUnsignedLong(f.getInt(80));
        if (n > MAX_LAYERS) throw fail("too many layers: " + n);
        if (HEADER_BYTES + n * DESCRIPTOR_BYTES > size) throw fail("truncated layer descriptors");
        if (f.getLong(88) != f.checksum(HEADER_BYTES, n * DESCRIPTOR_BYTES)) {
            throw fail("layer descriptor checksum mismatch (corrupt file)");
        }
        layers = new Layer[(int) n];
        long expectedInput = keyCount;
        for (int l = 0; l < n; l++) {
            layers[l] = readLayer(l, HEADER_BYTES + (long) l * DESCRIPTOR_BYTES, expectedInput);
            expectedInput = f.getLong(HEADER_BYTES + (long) l * DESCRIPTOR_BYTES + 32);
        }
        if (expectedInput != 0) throw fail("keys bumped out of the last layer");
    }

    /** Layer l from its descriptor at `d`, checked against the variant, the file and its keys. */
    private Layer readLayer(int l, long d, long expectedInput) {
        String which = "layer " + l + ": ";
        for (int i = 0; i < 4; i++) {
            if (f.getLong(d + 96 + 8 * i) != 0) throw fail(which + "reserved fields are not zero");
        }
        long upperStartBlock = f.getLong(d + 88);
        if (version == 1 && upperStartBlock != 0) throw fail(which + "reserved fields are not zero");
        Layer layer = checkedLayer(l, f.getLong(d), f.getInt(d + 8), f.getInt(d + 12), f.getLong(d + 16),
                f.getLong(d + 24), expectedInput, f.getLong(d + 32));
        if (version != 1 && upperStartBlock != layer.upperStartBlock) {
            throw fail(which + "inconsistent fractional-bits boundary");
        }
        return layer;
    }

    /** Layer l, checked against the variant, the file and the keys that reach it (either layout:
     *  a compact file states no input count, which is then `expectedInput`). */
    private Layer checkedLayer(int l, long numStarts, int shardBits, int kind, long salt, long inputKeys,
            long expectedInput, long bumpedKeys) {
        String which = "layer " + l + ": ";
        if (kind < 0 || kind > Layer.KIND_STANDARD) throw fail(which + "unknown kind");
        boolean bumping = params.variant.bumping;
        boolean last = l + 1 == layers.length;
        boolean kindFits = kind == Layer.KIND_PLAIN ? l > 0 || !bumping
                : kind == Layer.KIND_BUMPED ? bumping : l == 0 && !bumping;
        if (!kindFits) throw fail(which + "layer kind does not fit the variant");
        if (l == 0 && kind != Layer.KIND_STANDARD && salt != 0) throw fail(which + "layer 0 of this kind has no salt");
        if (numStarts == 0 || Long.compareUnsigned(numStarts, size * 8) > 0) throw fail(which + "bad slot count");
        if (kind != Layer.KIND_PLAIN) {
            long unit = kind == Layer.KIND_BUMPED ? params.bucketSize : params.width;
            if (shardBits != Long.numberOfTrailingZeros(params.shardSize) || numStarts % unit != 0) {
                throw fail(which + "inconsistent sharded-layer geometry");
            }
        } else if (shardBits != 63 || numStarts % params.width != 0 || !last) {
            throw fail(which + "inconsistent plain-layer geometry");
        }
        if (inputKeys != expectedInput || Long.compareUnsigned(bumpedKeys, inputKeys) > 0
                || (last && bumpedKeys != 0)) {
            throw fail(which + "inconsistent key counts");
        }
        return new Layer(params, f, l, numStarts, shardBits, kind, salt);
    }

    /** The canonical layout (section 4, or 10 for compact files): places every section. */
    private long layOut() {
        long alignment = compact() ? 16 : 64;
        long offset = metadataBytes();
        for (Layer layer : layers) {
            long thresholdBytes = layer.thresholdBytes();
            layer.thresholdOffset = thresholdBytes != 0 ? alignUp(offset, alignment) : 0;
            if (thresholdBytes != 0) offset = layer.thresholdOffset + thresholdBytes;
            layer.solutionOffset = alignUp(offset, alignment);
            offset = layer.solutionOffset + layer.solutionBytes();
        }
        return offset;
    }

    private long metadataBytes() {
        return compact() ? COMPACT_HEADER_BYTES + (long) layers.length * COMPACT_DESCRIPTOR_BYTES
                : HEADER_BYTES + (long) layers.length * DESCRIPTOR_BYTES;
    }

    private static long alignUp(long x, long alignment) {
        return (x + alignment - 1) / alignment * alignment;
    }

    /** A compact file's one checksum: XXH64 of its header (checksum field 0) and descriptors,
     *  then each layer's threshold and solution checksums. */
    private void checkCompactChecksum() {
        int frame = (int) metadataBytes();
        ByteBuffer covered = ByteBuffer.allocate(frame + 16 * layers.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < frame; i++) covered.put(i >= 32 && i < 40 ? 0 : f.getByte(i));
        for (Layer layer : layers) {
            covered.putLong(f.checksum(layer.thresholdOffset, layer.thresholdBytes()));
            covered.putLong(f.checksum(layer.solutionOffset, layer.solutionBytes()));
        }
        if (Hashing.XXH64.hash(covered.array(), 0, covered.capacity(), 0) != f.getLong(32)) {
            throw fail("checksum mismatch (corrupt file)");
        }
    }

    /** The canonical layout, the descriptors' agreement with it, zero gaps, and checksums. */
    private void checkSections() {
        long fileBytes = layOut();
        if (compact() && fileBytes != size) {
            throw fail((size < fileBytes ? "truncated: " : "trailing bytes: ") + size
                    + " bytes, its layers take " + fileBytes);
        }
        if (fileBytes != size) throw fail("section sizes do not add up to the file size");
        if (compact()) checkCompactChecksum();  // its frame states no section of its own
        long cursor = metadataBytes();
        for (int l = 0; l < layers.length; l++) {
            Layer layer = layers[l];
            long d = HEADER_BYTES + (long) l * DESCRIPTOR_BYTES;
            String which = "layer " + l + ": ";
            long thresholdBytes = layer.thresholdBytes();
            long solutionBytes = layer.solutionBytes();
            if (!compact() && (f.getLong(d + 40) != layer.thresholdOffset
                    || f.getLong(d + 48) != thresholdBytes || f.getLong(d + 64) != layer.solutionOffset
                    || f.getLong(d + 72) != solutionBytes)) {
                throw fail(which + "section offsets or sizes are inconsistent");
            }
            if (thresholdBytes != 0) {
                checkZeroGap(cursor, layer.thresholdOffset);
                cursor = layer.thresholdOffset + thresholdBytes;
            }
            checkZeroGap(cursor, layer.solutionOffset);
            cursor = layer.solutionOffset + solutionBytes;
            if (compact()) continue;
            if (f.checksum(layer.thresholdOffset, thresholdBytes) != f.getLong(d + 56)) {
                throw fail(which + "threshold section checksum mismatch (corrupt file)");
            }
            if (f.checksum(layer.solutionOffset, solutionBytes) != f.getLong(d + 80)) {
                throw fail(which + "solution section checksum mismatch (corrupt file)");
            }
        }
    }

    private void checkZeroGap(long from, long until) {
        for (long at = from; at < until; at++) {
            if (f.getByte(at) != 0) throw fail("non-zero padding at byte " + at);
        }
    }
}
