package dev.ribbon;

import java.nio.file.Path;

/**
 * A ribbon filter or retrieval structure read from a file, memory-mapped and queried in place.
 * Opening checks every checksum and structural rule of the format (docs/format.md); a corrupt
 * file is refused with a {@link RibbonException}. Instances are immutable and thread-safe.
 *
 * <pre>{@code
 * RibbonFilter f = RibbonFilter.open(Path.of("ids.ribbon"));
 * boolean maybe = f.contains(42L);
 * }</pre>
 */
public final class RibbonFilter {
    private final String source;
    private final FilterParams p;
    private final Layer[] layers;
    private final long keyCount;
    private final int version;
    private final long sizeBytes;
    private final long seedMixed;

    private RibbonFilter(String source, FileParser parsed, long sizeBytes) {
        this.source = source;
        this.p = parsed.params;
        this.layers = parsed.layers;
        this.keyCount = parsed.keyCount;
        this.version = parsed.version;
        this.sizeBytes = sizeBytes;
        this.seedMixed = Hashing.seedMix(p.seed);
    }

    /**
     * Maps and verifies a filter file.
     *
     * @throws RibbonException if the file cannot be read or is not a valid ribbon file
     */
    public static RibbonFilter open(Path path) {
        return open(path, MappedFile.DEFAULT_CHUNK_BITS);
    }

    /** As {@link #open(Path)}, mapping windows of 2^chunkBits bytes (tests use small ones). */
    static RibbonFilter open(Path path, int chunkBits) {
        MappedFile file = MappedFile.map(path, chunkBits);
        return new RibbonFilter(path.toString(), FileParser.parse(file, path.toString()), file.size());
    }

    /** The file's format version (1 to 3). */
    public int formatVersion() { return version; }

    /** What the file stores. */
    public Variant variant() { return p.variant; }

    /** True if the file was built from byte-string keys, false for 64-bit integer keys. */
    public boolean hasByteKeys() { return p.byteKeys; }

    /** True for retrieval structures, which answer {@code lookup} rather than {@code contains}. */
    public boolean isRetrieval() { return p.variant.retrieval; }

    /** The ribbon width w (32, 64 or 128). */
    public int width() { return p.width; }

    /** Result bits r: values of r bits, or a false-positive rate of about 2^-r. */
    public int resultBits() { return p.resultBits; }

    /** Distinct keys of the set. */
    public long keyCount() { return keyCount; }

    /** Layers of the file. */
    public int numLayers() { return layers.length; }

    /** The file's size in bytes. */
    public long sizeBytes() { return sizeBytes; }

    /** The file's path as given to {@link #open(Path)}. */
    public String source() { return source; }

    /** Is the integer key (possibly) in the set? The file must hold integer keys and be a filter. */
    public boolean contains(long key) {
        requireKind(false, false);
        return containsHash(Hashing.hashLong(key, seedMixed));
    }

    /** Is the byte-string key (possibly) in the set? The file must hold byte-string keys. */
    public boolean contains(byte[] key) {
        requireKind(true, false);
        return containsHash(Hashing.hashBytes(key, p.seed));
    }

    /** The value stored for an integer key (retrieval; arbitrary for keys not in the set). */
    public int lookup(long key) {
        requireKind(false, true);
        return lookupHash(Hashing.hashLong(key, seedMixed));
    }

    /** The value stored for a byte-string key (retrieval; arbitrary for keys not in the set). */
    public int lookup(byte[] key) {
        requireKind(true, true);
        return lookupHash(Hashing.hashBytes(key, p.seed));
    }

    /** Membership of every key: {@code result[i] = contains(keys[i])}. */
    public boolean[] contains(long[] keys) {
        requireKind(false, false);
        boolean[] out = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) out[i] = containsHash(Hashing.hashLong(keys[i], seedMixed));
        return out;
    }

    /** Membership of every key: {@code result[i] = contains(keys[i])}. */
    public boolean[] contains(byte[][] keys) {
        requireKind(true, false);
        boolean[] out = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) out[i] = containsHash(Hashing.hashBytes(keys[i], p.seed));
        return out;
    }

    /** The value of every key: {@code result[i] = lookup(keys[i])}. */
    public int[] lookup(long[] keys) {
        requireKind(false, true);
        int[] out = new int[keys.length];
        for (int i = 0; i < keys.length; i++) out[i] = lookupHash(Hashing.hashLong(keys[i], seedMixed));
        return out;
    }

    /** The value of every key: {@code result[i] = lookup(keys[i])}. */
    public int[] lookup(byte[][] keys) {
        requireKind(true, true);
        int[] out = new int[keys.length];
        for (int i = 0; i < keys.length; i++) out[i] = lookupHash(Hashing.hashBytes(keys[i], p.seed));
        return out;
    }

    private void requireKind(boolean byteKeys, boolean retrieval) {
        if (p.byteKeys != byteKeys) {
            throw new RibbonException(source + ": the filter was built from "
                    + (p.byteKeys ? "byte-string keys" : "64-bit integer keys")
                    + " and cannot be queried with " + (byteKeys ? "byte-string keys" : "integer keys"));
        }
        if (p.variant.retrieval != retrieval) {
            throw new RibbonException(source + (retrieval
                    ? ": lookup is for retrieval structures; this file is a filter"
                    : ": a retrieval structure (built with values) answers lookups, not membership"));
        }
    }

    /** Layer 0's hash of a key hash: the key hash, or its remix where layer 0 has a salt. */
    private long layer0Hash(long keyHash) {
        return layers[0].salt != 0 ? Hashing.remix(keyHash, layers[0].salt) : keyHash;
    }

    /** Membership: the first layer that does not bump the key answers; none: absent. */
    private boolean containsHash(long keyHash) {
        if (layers.length == 0) return false;
        long hash = layer0Hash(keyHash);
        for (int l = 0; l < layers.length; l++) {
            Layer layer = layers[l];
            if (l > 0) hash = Hashing.remix(hash, layer.salt);
            long start = layer.start(hash);
            if (!layer.bumps(start)) return layer.matches(start, hash);
        }
        return false;
    }

    /** Retrieval: the result of the first layer that does not bump the key; none: 0. */
    private int lookupHash(long keyHash) {
        if (layers.length == 0) return 0;
        long hash = layer0Hash(keyHash);
        for (int l = 0; l < layers.length; l++) {
            Layer layer = layers[l];
            if (l > 0) hash = Hashing.remix(hash, layer.salt);
            long start = layer.start(hash);
            if (!layer.bumps(start)) return layer.result(start, hash);
        }
        return 0;
    }
}
