package dev.ribbon;

import java.nio.charset.StandardCharsets;

/**
 * Validates a mapped file as the C++ reader does (docs/format.md, sections 2 to 6), in the same
 * order, and builds its layers. Every failure is a RibbonException naming the file.
 */
final class FileParser {
    static final int HEADER_BYTES = 128;
    static final int DESCRIPTOR_BYTES = 128;
    static final int MAX_LAYERS = 16;
    static final int OLDEST_VERSION = 1;
    static final int CURRENT_VERSION = 4;
    private static final long ALIGNMENT = 64;

    private final MappedFile f;
    private final String source;
    private final long size;
    int version;
    FilterParams params;
    long keyCount;
    Layer[] layers;

    private FileParser(MappedFile f, String source) {
        this.f = f;
        this.source = source;
        this.size = f.size();
    }

    static FileParser parse(MappedFile f, String source) {
        FileParser parser = new FileParser(f, source);
        parser.readHeader();
        parser.readLayers();
        parser.checkSections();
        for (Layer layer : parser.layers) {
            if (layer.regions != null) new CodeRegionChecker(f, layer, parser::fail).check();
        }
        return parser;
    }

    RibbonException fail(String what) {
        return new RibbonException(source + ": " + what);
    }

    private void readHeader() {
        if (size < HEADER_BYTES) {
            throw fail("truncated: " + size + " bytes, too short for a ribbon filter header (128 bytes)");
        }
        byte[] magic = new byte[8];
        for (int i = 0; i < 8; i++) magic[i] = f.getByte(i);
        if (!new String(magic, StandardCharsets.ISO_8859_1).equals("RIBBONFL")) {
            throw fail("not a ribbon filter (bad magic)");
        }
        version = f.getInt(8);
        if (version < OLDEST_VERSION || version > CURRENT_VERSION) {
            throw fail("unsupported format version " + Integer.toUnsignedString(version)
                    + " (this library reads versions 1 to 4)");
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
        if ((version != 4 && f.getInt(100) != 0) || (version == 1 && f.getInt(96) != 0)) {
            throw fail("reserved header fields are not zero");
        }
        if (version == 4 && f.getInt(100) == 0) {
            throw fail("format version 4 without check bits (files without them are versions 1-3)");
        }
        int encoding = f.getInt(52);
        if (!((encoding == 1 && (version <= 2 || version == 4)) || (encoding == 2 && version >= 3))) {
            throw fail("unknown threshold encoding " + Integer.toUnsignedString(encoding)
                    + " for format version " + version);
        }
        if (f.getLong(104) != 0 || f.getLong(112) != 0) throw fail("reserved header fields are not zero");
        params = new FilterParams(f, variant);
        String problem = params.problem();
        if (problem != null) throw fail("bad parameters: " + problem);
        keyCount = f.getLong(72);
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
        long numStarts = f.getLong(d);
        int shardBits = f.getInt(d + 8);
        int kind = f.getInt(d + 12);
        long salt = f.getLong(d + 16);
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
        long inputKeys = f.getLong(d + 24);
        long bumpedKeys = f.getLong(d + 32);
        if (inputKeys != expectedInput || Long.compareUnsigned(bumpedKeys, inputKeys) > 0
                || (last && bumpedKeys != 0)) {
            throw fail(which + "inconsistent key counts");
        }
        Layer layer = new Layer(params, f, l, numStarts, shardBits, kind, salt);
        if (version != 1 && upperStartBlock != layer.upperStartBlock) {
            throw fail(which + "inconsistent fractional-bits boundary");
        }
        return layer;
    }

    private static long alignUp(long x) {
        return (x + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    /** The canonical layout, the descriptors' agreement with it, zero gaps, and checksums. */
    private void checkSections() {
        long offset = HEADER_BYTES + (long) layers.length * DESCRIPTOR_BYTES;
        for (Layer layer : layers) {
            long thresholdBytes = layer.thresholdBytes();
            layer.thresholdOffset = thresholdBytes != 0 ? alignUp(offset) : 0;
            if (thresholdBytes != 0) offset = layer.thresholdOffset + thresholdBytes;
            layer.solutionOffset = alignUp(offset);
            offset = layer.solutionOffset + layer.solutionBytes();
        }
        if (offset != size) throw fail("section sizes do not add up to the file size");
        long cursor = HEADER_BYTES + (long) layers.length * DESCRIPTOR_BYTES;
        for (int l = 0; l < layers.length; l++) {
            Layer layer = layers[l];
            long d = HEADER_BYTES + (long) l * DESCRIPTOR_BYTES;
            String which = "layer " + l + ": ";
            long thresholdBytes = layer.thresholdBytes();
            long solutionBytes = layer.solutionBytes();
            if (f.getLong(d + 40) != layer.thresholdOffset || f.getLong(d + 48) != thresholdBytes
                    || f.getLong(d + 64) != layer.solutionOffset || f.getLong(d + 72) != solutionBytes) {
                throw fail(which + "section offsets or sizes are inconsistent");
            }
            if (thresholdBytes != 0) {
                checkZeroGap(cursor, layer.thresholdOffset);
                cursor = layer.thresholdOffset + thresholdBytes;
            }
            checkZeroGap(cursor, layer.solutionOffset);
            cursor = layer.solutionOffset + solutionBytes;
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
