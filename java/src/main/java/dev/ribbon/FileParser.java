package dev.ribbon;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Validates a mapped file as the C++ reader does (docs/format.md, sections 2 to 12), in the same
 * order, and builds its layers. Every failure is a RibbonException naming the file. What each
 * version admits is {@link VersionRules}'s table.
 */
final class FileParser {
    static final int HEADER_BYTES = 128;
    static final int DESCRIPTOR_BYTES = 128;
    static final int COMPACT_DESCRIPTOR_BYTES = 24;
    static final int MAX_LAYERS = 16;
    /** A trailing section's frame: u64 payload_bytes, u64 payload checksum (section 12). */
    static final int TRAILING_FRAME_BYTES = 16;

    private final MappedFile f;
    private final String source;
    private final long size;
    int version;
    /** The version's row of the table. */
    VersionRules.Row rules;
    /** The features the file needs: stated (version 7) or implied by its header (1 to 6). */
    int features;
    /** The compact layout (version 5, or 7 with the compact feature): where its header keeps what. */
    private FilterParams.CompactHeader compactHeader;
    FilterParams params;
    long keyCount;
    /** Filter sets: distinct groups (0 for other files). */
    long groupCount;
    Layer[] layers;
    /** The group-names section (checked), or null. */
    GroupNames groupNames;
    /** The metadata section's payload: offset and bytes (offset -1: none). */
    long metadataOffset = -1;
    long metadataBytes;

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
        return compactHeader != null;
    }

    /**
     * The magic, then the version, which says (with version 7's features) which layout the rest
     * has; version 7's features word: no unknown bit, no combination its bits alone forbid.
     */
    private void readVersion() {
        if (size < 12) throw fail("truncated: " + size + " bytes, too short for a ribbon filter header");
        byte[] magic = new byte[8];
        for (int i = 0; i < 8; i++) magic[i] = f.getByte(i);
        if (!new String(magic, StandardCharsets.ISO_8859_1).equals("RIBBONFL")) {
            throw fail("not a ribbon filter (bad magic)");
        }
        version = f.getInt(8);
        rules = VersionRules.of(version);
        if (rules == null) {
            throw fail("unsupported format version " + Integer.toUnsignedString(version) + " (this library reads versions "
                    + VersionRules.OLDEST_VERSION + " to " + VersionRules.CURRENT_VERSION + ")");
        }
        boolean compactLayout = rules.layout == VersionRules.Layout.COMPACT;
        if (rules.statesFeatures()) {
            if (size < 16) throw fail("truncated: " + size + " bytes, too short for a version-" + version + " header");
            features = f.getInt(12);
            String problem = VersionRules.unknownBitProblem(features);
            if (problem == null) problem = VersionRules.combinationProblem(features);
            if (problem != null) throw fail(problem);
            compactLayout = (features & VersionRules.COMPACT) != 0;
        }
        if (compactLayout) compactHeader = version == 5 ? FilterParams.CompactHeader.V5 : FilterParams.CompactHeader.V7;
    }

    /**
     * The features against the version's row: implied by the header's fields (versions 1 to 6),
     * or stated and agreeing with them (7); then the rules of the features table.
     */
    private void checkFeatures(Variant variant, int encoding, int checkBits, int groupKind) {
        int fromFields = VersionRules.implied(compact(), encoding, checkBits, groupKind);
        String problem;
        if (rules.statesFeatures()) {
            problem = VersionRules.agreementProblem(features, fromFields);
        } else {
            features = fromFields;
            problem = VersionRules.combinationProblem(features);
        }
        if (problem == null) problem = VersionRules.admitProblem(rules, features);
        if (problem == null) problem = VersionRules.variantProblem(features, variant);
        if (problem != null) throw fail(problem);
    }

    /** The group fields: a set's (section 11: no more groups than keys, and groups exactly when
     *  there are keys), else 0. */
    private void checkGroups(int groupKind, long groups, long keys) {
        if (groupKind == 0) {
            if (groups != 0) throw fail("reserved header fields are not zero (a group count, but no group kind)");
            return;
        }
        if (Long.compareUnsigned(groups, keys) > 0 || (groups == 0) != (keys == 0)) {
            throw fail("inconsistent group count: " + Long.toUnsignedString(groups) + " groups for "
                    + Long.toUnsignedString(keys) + " keys");
        }
    }

    private int u8(long offset) {
        return f.getByte(offset) & 0xFF;
    }

    /** A compact header (sections 10 and 12): the fields that need no parameters, the features,
     *  then the parameters. */
    private void readCompactHeader() {
        FilterParams.CompactHeader h = compactHeader;
        if (size < h.bytes) {
            throw fail("truncated: " + size + " bytes, too short for a compact ribbon filter header (" + h.bytes + " bytes)");
        }
        Variant variant = Variant.of(u8(h.variant));
        if (variant == null) throw fail("unknown filter variant " + u8(h.variant));
        long reserved = h.reservedBytes == 1 ? u8(h.reserved) : f.getInt(h.reserved);
        if (reserved != 0) throw fail("reserved header fields are not zero");
        int encoding = u8(h.thresholdEncoding);
        if (encoding != 1 && encoding != 2) throw fail("unknown threshold encoding " + encoding);
        if (u8(h.bucketBits) > 16 || u8(h.shardBits) > 31) throw fail("bad parameters: bucket or shard size");
        int groupKind = h.groupKind < 0 ? 0 : u8(h.groupKind);
        if (groupKind > 2) throw fail("unknown group kind " + groupKind);
        checkFeatures(variant, encoding, u8(h.checkBits), groupKind);
        params = FilterParams.compact(f, variant, h);
        keyCount = f.getLong(h.keyCount);
        groupCount = h.groupCount < 0 ? 0 : f.getLong(h.groupCount);
        checkGroups(groupKind, groupCount, keyCount);
    }

    private void readCompactLayers() {
        FilterParams.CompactHeader h = compactHeader;
        int n = u8(h.numLayers);
        if (n > MAX_LAYERS) throw fail("too many layers: " + n);
        if (h.bytes + (long) n * COMPACT_DESCRIPTOR_BYTES > size) {
            throw fail("truncated layer descriptors");
        }
        for (int l = 0; l < n; l++) {
            long d = h.bytes + (long) l * COMPACT_DESCRIPTOR_BYTES;
            if (u8(d + 21) != 0 || u8(d + 22) != 0 || u8(d + 23) != 0) {
                throw fail("layer " + l + ": reserved fields are not zero");
            }
        }
        String problem = params.problem();
        if (problem != null) throw fail("bad parameters: " + problem);
        layers = new Layer[n];
        long input = keyCount;
        for (int l = 0; l < n; l++) {
            long d = h.bytes + (long) l * COMPACT_DESCRIPTOR_BYTES;
            int kind = u8(d + 20);
            int shardBits = kind == Layer.KIND_PLAIN ? 63 : u8(h.shardBits);
            long bumped = f.getLong(d + 8);
            layers[l] = checkedLayer(l, Integer.toUnsignedLong(f.getInt(d + 16)), shardBits, kind,
                    f.getLong(d), input, input, bumped);
            input = bumped;
        }
        if (input != 0) throw fail("keys bumped out of the last layer");
    }

    /** A standard header (section 2; in version 7 with the features word at offset 12). */
    private void readHeader() {
        if (size < HEADER_BYTES) {
            throw fail("truncated: " + size + " bytes, too short for a ribbon filter header (128 bytes)");
        }
        if (f.getLong(120) != f.checksum(0, 120)) throw fail("header checksum mismatch (corrupt file)");
        if ((!rules.statesFeatures() && f.getInt(12) != HEADER_BYTES) || f.getInt(84) != DESCRIPTOR_BYTES) {
            throw fail("inconsistent header or descriptor size");
        }
        long fileBytes = f.getLong(16);
        if (fileBytes != size) {
            throw fail((Long.compareUnsigned(size, fileBytes) < 0 ? "truncated: " : "trailing bytes: ")
                    + size + " bytes, header says " + Long.toUnsignedString(fileBytes));
        }
        Variant variant = Variant.of(f.getInt(24));
        if (variant == null || (rules.bumpedWithoutFraction() && variant != Variant.BUMPED)) {
            throw fail("unknown filter variant " + Integer.toUnsignedString(f.getInt(24)));
        }
        if ((rules.bumpedWithoutFraction() && f.getInt(96) != 0) || f.getInt(116) != 0) {
            throw fail("reserved header fields are not zero");
        }
        int encoding = f.getInt(52);
        if (encoding != 1 && encoding != 2) {
            throw fail("unknown threshold encoding " + Integer.toUnsignedString(encoding) + " for format version " + version);
        }
        int groupKind = f.getInt(112);
        if (groupKind < 0 || groupKind > 2) throw fail("unknown group kind " + Integer.toUnsignedString(groupKind));
        checkFeatures(variant, encoding, f.getInt(100), groupKind);
        keyCount = f.getLong(72);
        groupCount = f.getLong(104);
        checkGroups(groupKind, groupCount, keyCount);
        params = FilterParams.standard(f, variant);
        String problem = params.problem();
        if (problem != null) throw fail("bad parameters: " + problem);
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
        if (rules.bumpedWithoutFraction() && upperStartBlock != 0) throw fail(which + "reserved fields are not zero");
        Layer layer = checkedLayer(l, f.getLong(d), f.getInt(d + 8), f.getInt(d + 12), f.getLong(d + 16),
                f.getLong(d + 24), expectedInput, f.getLong(d + 32));
        if (!rules.bumpedWithoutFraction() && upperStartBlock != layer.upperStartBlock) {
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

    /** The canonical layout (section 4, or 10 for compact files): places every layer's sections
     *  and returns where the last one ends. */
    private long layOut() {
        long alignment = alignment();
        long offset = frameBytes();
        for (Layer layer : layers) {
            long thresholdBytes = layer.thresholdBytes();
            layer.thresholdOffset = thresholdBytes != 0 ? alignUp(offset, alignment) : 0;
            if (thresholdBytes != 0) offset = layer.thresholdOffset + thresholdBytes;
            layer.solutionOffset = alignUp(offset, alignment);
            offset = layer.solutionOffset + layer.solutionBytes();
        }
        return offset;
    }

    private long alignment() {
        return compact() ? 16 : 64;
    }

    /** The header and descriptors' bytes. */
    private long frameBytes() {
        return compact() ? compactHeader.bytes + (long) layers.length * COMPACT_DESCRIPTOR_BYTES
                : HEADER_BYTES + (long) layers.length * DESCRIPTOR_BYTES;
    }

    private static long alignUp(long x, long alignment) {
        return (x + alignment - 1) / alignment * alignment;
    }

    /** A compact file's one checksum: XXH64 of its header (checksum field 0) and descriptors,
     *  then each layer's threshold and solution checksums. */
    private void checkCompactChecksum() {
        int frame = (int) frameBytes();
        int at = compactHeader.checksum;
        ByteBuffer covered = ByteBuffer.allocate(frame + 16 * layers.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < frame; i++) covered.put(i >= at && i < at + 8 ? 0 : f.getByte(i));
        for (Layer layer : layers) {
            covered.putLong(f.checksum(layer.thresholdOffset, layer.thresholdBytes()));
            covered.putLong(f.checksum(layer.solutionOffset, layer.solutionBytes()));
        }
        if (Hashing.XXH64.hash(covered.array(), 0, covered.capacity(), 0) != f.getLong(at)) {
            throw fail("checksum mismatch (corrupt file)");
        }
    }

    /**
     * The trailing sections the features name (section 12), in the order of their bits, from
     * where the layers end: each frame's offset, or a failure where one runs past the file.
     */
    private long[] layOutTrailing(long layersEnd) {
        int[] bits = {VersionRules.GROUP_NAMES, VersionRules.METADATA};
        long[] frames = new long[bits.length];
        long offset = layersEnd;
        for (int i = 0; i < bits.length; i++) {
            frames[i] = -1;
            if ((features & bits[i]) == 0) continue;
            String name = VersionRules.featureName(Integer.numberOfTrailingZeros(bits[i]));
            long frame = alignUp(offset, alignment());
            if (frame > size || size - frame < TRAILING_FRAME_BYTES) {
                throw fail("truncated: " + size + " bytes, the " + name + " section's frame starts at " + frame);
            }
            long payload = f.getLong(frame);
            if (Long.compareUnsigned(payload, size - frame - TRAILING_FRAME_BYTES) > 0) {
                throw fail("truncated: " + size + " bytes, the " + name + " section's " + Long.toUnsignedString(payload)
                        + " bytes at " + (frame + TRAILING_FRAME_BYTES) + " run past the end");
            }
            frames[i] = frame;
            offset = frame + TRAILING_FRAME_BYTES + payload;
        }
        return frames;
    }

    /** The canonical layout, the descriptors' agreement with it, zero gaps, checksums, and the
     *  trailing sections. */
    private void checkSections() {
        long layersEnd = layOut();
        if (layersEnd > size) {
            throw fail(compact() ? "truncated: " + size + " bytes, its layers take " + layersEnd
                    : "section sizes do not add up to the file size");
        }
        long[] frames = layOutTrailing(layersEnd);
        long fileBytes = layersEnd;
        for (long frame : frames) {
            if (frame >= 0) fileBytes = frame + TRAILING_FRAME_BYTES + f.getLong(frame);
        }
        if (fileBytes != size) {
            throw fail(compact() ? "trailing bytes: " + size + " bytes, its sections take " + fileBytes
                    : "section sizes do not add up to the file size");
        }
        if (compact()) checkCompactChecksum();  // its frame states no section of its own
        long cursor = frameBytes();
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
        for (int i = 0; i < frames.length; i++) {
            if (frames[i] < 0) continue;
            checkZeroGap(cursor, frames[i]);
            long payloadOffset = frames[i] + TRAILING_FRAME_BYTES;
            long payloadBytes = f.getLong(frames[i]);
            cursor = payloadOffset + payloadBytes;
            String name = i == 0 ? "group names" : "metadata";
            if (f.checksum(payloadOffset, payloadBytes) != f.getLong(frames[i] + 8)) {
                throw fail(name + " section checksum mismatch (corrupt file)");
            }
            if (i == 0) {
                groupNames = GroupNames.check(f, payloadOffset, payloadBytes, params.groupKind, groupCount, this::fail);
            } else {
                metadataOffset = payloadOffset;
                metadataBytes = payloadBytes;
            }
        }
    }

    private void checkZeroGap(long from, long until) {
        for (long at = from; at < until; at++) {
            if (f.getByte(at) != 0) throw fail("non-zero padding at byte " + at);
        }
    }
}
