package dev.ribbon;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.OptionalInt;

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
    /** Feature bit 0 (docs/format.md, section 12): the compact layout. */
    public static final int FEATURE_COMPACT = VersionRules.COMPACT;
    /** Feature bit 1: 1+-bit threshold codes. */
    public static final int FEATURE_ONE_PLUS_BIT_CODES = VersionRules.ONE_PLUS_BIT_CODES;
    /** Feature bit 2: retrieval check bits. */
    public static final int FEATURE_CHECK_BITS = VersionRules.CHECK_BITS;
    /** Feature bit 3: a filter set. */
    public static final int FEATURE_FILTER_SET = VersionRules.FILTER_SET;
    /** Feature bit 4: a filter set's group names. */
    public static final int FEATURE_GROUP_NAMES = VersionRules.GROUP_NAMES;
    /** Feature bit 5: application metadata. */
    public static final int FEATURE_METADATA = VersionRules.METADATA;

    private final String source;
    private final FilterParams p;
    private final Layer[] layers;
    private final long keyCount;
    private final long groupCount;
    private final int version;
    private final int features;
    private final long sizeBytes;
    private final MappedFile file;
    /** The checked group-names section, or null. */
    private final GroupNames groupNames;
    private final long metadataOffset;
    private final long metadataBytes;
    /** Decoded on first use: the names (long[] or byte[][]) and their group hashes. */
    private volatile Object names;
    private volatile long[] nameHashes;
    private final long seedMixed;
    /** What the file answers: KEYS_* | ANSWERS_* (one compare per call, not two field reads). */
    private final int kind;
    /** The kind that answers contains(): kind, or without RETRIEVAL where values carry check bits. */
    private final int membershipKind;
    /** The low valueBits of a stored result: the value (all ones without check bits). */
    private final int valueMask;
    /** The w = 64 plan, where the file fits it (Query64.of); null: the layers' general code. */
    private final Query64 plan;
    /** The fingerprint mask of membership: 0 in homogeneous filters (rows solved for 0), else all ones. */
    private final int rhsMask;

    private static final int BYTE_KEYS = 1;
    private static final int RETRIEVAL = 2;
    private static final int SET = 4;

    private RibbonFilter(String source, FileParser parsed, MappedFile file, long heapBytes) {
        this.source = source;
        this.p = parsed.params;
        this.layers = parsed.layers;
        this.keyCount = parsed.keyCount;
        this.groupCount = parsed.groupCount;
        this.version = parsed.version;
        this.features = parsed.features;
        this.sizeBytes = file.size();
        this.file = file;
        this.groupNames = parsed.groupNames;
        this.metadataOffset = parsed.metadataOffset;
        this.metadataBytes = parsed.metadataBytes;
        this.seedMixed = Hashing.seedMix(p.seed);
        this.kind = (p.byteKeys ? BYTE_KEYS : 0) | (p.variant.retrieval ? RETRIEVAL : 0)
                | (p.groupKind != 0 ? SET : 0);
        this.membershipKind = p.checkBits != 0 ? kind & ~RETRIEVAL : kind;
        this.valueMask = p.valueBits() >= 32 ? -1 : (1 << p.valueBits()) - 1;
        this.plan = Query64.of(p, layers, file, heapBytes);
        this.rhsMask = p.variant == Variant.HOMOGENEOUS ? 0 : -1;
    }

    /**
     * Maps and verifies a filter file. Layer 0's solution is also copied into the heap where it
     * takes at most an eighth of the heap's maximum size (the system property
     * {@code dev.ribbon.heapCopyBytes} sets another limit; 0: never), which makes queries of
     * w = 64 files faster; larger ones are read in place.
     *
     * @throws RibbonException if the file cannot be read or is not a valid ribbon file
     */
    public static RibbonFilter open(Path path) {
        return open(path, MappedFile.DEFAULT_CHUNK_BITS);
    }

    /** As {@link #open(Path)}, mapping windows of 2^chunkBits bytes (tests use small ones). */
    static RibbonFilter open(Path path, int chunkBits) {
        return open(path, chunkBits, Words.defaultHeapBytes());
    }

    /** As {@link #open(Path, int)}, copying at most {@code heapBytes} bytes into the heap. */
    static RibbonFilter open(Path path, int chunkBits, long heapBytes) {
        MappedFile file = MappedFile.map(path, chunkBits);
        return new RibbonFilter(path.toString(), FileParser.parse(file, path.toString()), file, heapBytes);
    }

    /**
     * The file's format version (1 to 7; 5 is the compact layout of small filters, 6 a filter
     * set, 7 a file that states its {@link #features()}).
     */
    public int formatVersion() { return version; }

    /**
     * What the file needs of its reader, as the word of feature bits of docs/format.md, section
     * 12 ({@code FEATURE_*}): stated by a version-7 file, implied by the header of older ones
     * (version 5: compact; threshold encoding 2: one_plus_bit_codes; check bits; a filter set).
     */
    public int features() { return features; }

    /** True for a filter set that stores the names of its groups (format version 7). */
    public boolean hasGroupNames() { return groupNames != null; }

    /**
     * The names of a filter set's groups named by integers, ascending as unsigned 64-bit
     * integers: every group its builder was given, including groups that hold no key, so at
     * least {@link #groupCount()} of them. A new array each call.
     *
     * @throws RibbonException if the file is not a set with integer group names
     */
    public long[] groupsLong() {
        requireNames(false);
        return ((long[]) decodedNames()).clone();
    }

    /**
     * The names of a filter set's groups named by byte strings, ascending in unsigned byte
     * order (as {@link #groupsLong()}). New arrays each call.
     *
     * @throws RibbonException if the file is not a set with byte-string group names
     */
    public byte[][] groupsBytes() {
        requireNames(true);
        byte[][] stored = (byte[][]) decodedNames();
        byte[][] out = new byte[stored.length][];
        for (int i = 0; i < out.length; i++) out[i] = stored[i].clone();
        return out;
    }

    /**
     * The application's metadata stored in the file (feature {@code metadata}), as written; null
     * where the file has none. A new array each call.
     */
    public byte[] metadata() {
        if (metadataOffset < 0) return null;
        if (metadataBytes > Integer.MAX_VALUE - 8) {
            throw new RibbonException(source + ": metadata of " + metadataBytes + " bytes, more than a Java array holds");
        }
        byte[] out = new byte[(int) metadataBytes];
        file.read(metadataOffset, out);
        return out;
    }

    /** What the file stores. */
    public Variant variant() { return p.variant; }

    /** True if the file was built from byte-string keys, false for 64-bit integer keys. */
    public boolean hasByteKeys() { return p.byteKeys; }

    /**
     * True for retrieval structures, which answer {@code lookup} and {@code find} (and, with
     * check bits, {@code contains}).
     */
    public boolean isRetrieval() { return p.variant.retrieval; }

    /** Retrieval: fingerprint bits stored above each value (0: none; then every key has a value). */
    public int checkBits() { return p.checkBits; }

    /** The ribbon width w (32, 64 or 128). */
    public int width() { return p.width; }

    /** Result bits r: values of r bits (r less checkBits()), or a false-positive rate of about 2^-r. */
    public int resultBits() { return p.resultBits; }

    /** Distinct keys of the set (of a filter set: distinct (group, key) pairs). */
    public long keyCount() { return keyCount; }

    /** True for a filter set (format version 6, or 7 with feature filter_set), queried with
     *  {@code containsIn} (and, where it has group names, {@code groupsOf}). */
    public boolean isSet() { return p.groupKind != 0; }

    /** A filter set's groups are byte strings (true) or 64-bit integers (false). */
    public boolean hasByteGroups() { return p.groupKind == 2; }

    /** A filter set's distinct groups (0 for other files). */
    public long groupCount() { return groupCount; }

    /** Layers of the file. */
    public int numLayers() { return layers.length; }

    /** The file's size in bytes. */
    public long sizeBytes() { return sizeBytes; }

    /** The file's path as given to {@link #open(Path)}. */
    public String source() { return source; }

    /**
     * Is the integer key (possibly) in the set? The file must hold integer keys and be a filter
     * or a retrieval structure with check bits (a key whose check bits match).
     */
    public boolean contains(long key) {
        requireMembership(0);
        return containsHash(Hashing.hashLong(key, seedMixed));
    }

    /** Is the byte-string key (possibly) in the set? The file must hold byte-string keys. */
    public boolean contains(byte[] key) {
        requireMembership(BYTE_KEYS);
        return containsHash(Hashing.hashBytes(key, p.seed));
    }

    /**
     * As {@link #contains(byte[])}, for the key {@code key[offset, offset + length)} (a Spark
     * string read where it lies, without a copy).
     */
    public boolean contains(byte[] key, int offset, int length) {
        requireMembership(BYTE_KEYS);
        return containsHash(Hashing.hashBytes(key, offset, length, p.seed));
    }

    /**
     * The value stored for an integer key (retrieval; arbitrary for keys not in the set, its
     * value bits only where the file has check bits).
     */
    public int lookup(long key) {
        requireKind(RETRIEVAL);
        return lookupHash(Hashing.hashLong(key, seedMixed)) & valueMask;
    }

    /** The value stored for a byte-string key (retrieval; as {@link #lookup(long)}). */
    public int lookup(byte[] key) {
        requireKind(BYTE_KEYS | RETRIEVAL);
        return lookupHash(Hashing.hashBytes(key, p.seed)) & valueMask;
    }

    /**
     * Retrieval: the value of an integer key, or empty where its check bits do not match (a key
     * not in the set, except with probability 2^-checkBits()). Without check bits every key has
     * a value, as from {@link #lookup(long)}.
     */
    public OptionalInt find(long key) {
        requireKind(RETRIEVAL);
        return foundValue(Hashing.hashLong(key, seedMixed));
    }

    /** Retrieval: the value of a byte-string key, or empty (as {@link #find(long)}). */
    public OptionalInt find(byte[] key) {
        requireKind(BYTE_KEYS | RETRIEVAL);
        return foundValue(Hashing.hashBytes(key, p.seed));
    }

    /** Retrieval: as {@link #find(byte[])}, for the key {@code key[offset, offset + length)}. */
    public OptionalInt find(byte[] key, int offset, int length) {
        requireKind(BYTE_KEYS | RETRIEVAL);
        return foundValue(Hashing.hashBytes(key, offset, length, p.seed));
    }

    /**
     * Filter sets: may the group hold the key? True for every pair of the set; other pairs
     * (another group's key, a group never given) with probability about 2^-r. The group's and
     * the key's kinds must be the set's.
     */
    public boolean containsIn(long group, long key) {
        requireSet(false, 0);
        return containsHash(Hashing.pairHash(Hashing.groupHashLong(group, seedMixed), Hashing.hashLong(key, seedMixed)));
    }

    /** As {@link #containsIn(long, long)}, an integer group and a byte-string key. */
    public boolean containsIn(long group, byte[] key) {
        requireSet(false, BYTE_KEYS);
        return containsHash(Hashing.pairHash(Hashing.groupHashLong(group, seedMixed), Hashing.hashBytes(key, p.seed)));
    }

    /** As {@link #containsIn(long, long)}, a byte-string group and an integer key. */
    public boolean containsIn(byte[] group, long key) {
        requireSet(true, 0);
        return containsHash(Hashing.pairHash(Hashing.groupHashBytes(group, p.seed), Hashing.hashLong(key, seedMixed)));
    }

    /** As {@link #containsIn(long, long)}, a byte-string group and a byte-string key. */
    public boolean containsIn(byte[] group, byte[] key) {
        requireSet(true, BYTE_KEYS);
        return containsHash(Hashing.pairHash(Hashing.groupHashBytes(group, p.seed), Hashing.hashBytes(key, p.seed)));
    }

    /**
     * Filter sets with group names: the groups that may hold each integer key. {@code
     * result[i]} lists, ascending, the indices into {@link #groupsLong()} (or {@link
     * #groupsBytes()}) of the groups g with {@code containsIn(g, keys[i])}: every group that
     * holds the key, and others with probability about 2^-r each. Each group's hash is computed
     * once, then every (group, key) pair is probed.
     *
     * @throws RibbonException if the file is not a filter set of integer keys with group names
     */
    public int[][] groupsOf(long[] keys) {
        requireGroupsOf(false);
        long[] keyHashes = new long[keys.length];
        for (int i = 0; i < keys.length; i++) keyHashes[i] = Hashing.hashLong(keys[i], seedMixed);
        return groupsOfHashes(keyHashes);
    }

    /** As {@link #groupsOf(long[])}, for byte-string keys. */
    public int[][] groupsOf(byte[][] keys) {
        requireGroupsOf(true);
        long[] keyHashes = new long[keys.length];
        for (int i = 0; i < keys.length; i++) keyHashes[i] = Hashing.hashBytes(keys[i], p.seed);
        return groupsOfHashes(keyHashes);
    }

    private int[][] groupsOfHashes(long[] keyHashes) {
        long[] groups = groupHashes();
        int block = Math.min(groups.length, Query64.BLOCK);
        Batch batch = new Batch(block);
        boolean[] found = new boolean[groups.length];
        int[] indices = new int[groups.length];
        int[][] out = new int[keyHashes.length][];
        for (int k = 0; k < keyHashes.length; k++) {
            for (int from = 0; from < groups.length; from += block) {
                int count = Math.min(block, groups.length - from);
                for (int i = 0; i < count; i++) batch.hashes[i] = Hashing.pairHash(groups[from + i], keyHashes[k]);
                containsHashes(batch, count, found, from);
            }
            int n = 0;
            for (int g = 0; g < groups.length; g++) {
                if (found[g]) indices[n++] = g;
            }
            out[k] = Arrays.copyOf(indices, n);
        }
        return out;
    }

    /** The names, decoded once (long[] or byte[][]). */
    private Object decodedNames() {
        Object decoded = names;
        if (decoded == null) {
            java.util.function.Function<String, RibbonException> fail = what -> new RibbonException(source + ": " + what);
            decoded = groupNames.groupKind == 2 ? groupNames.bytes(fail) : groupNames.longs(fail);
            names = decoded;
        }
        return decoded;
    }

    /** The hash of every named group (section 11), computed once. */
    private long[] groupHashes() {
        long[] hashes = nameHashes;
        if (hashes == null) {
            Object decoded = decodedNames();
            if (decoded instanceof long[]) {
                long[] groups = (long[]) decoded;
                hashes = new long[groups.length];
                for (int i = 0; i < groups.length; i++) hashes[i] = Hashing.groupHashLong(groups[i], seedMixed);
            } else {
                byte[][] groups = (byte[][]) decoded;
                hashes = new long[groups.length];
                for (int i = 0; i < groups.length; i++) hashes[i] = Hashing.groupHashBytes(groups[i], p.seed);
            }
            nameHashes = hashes;
        }
        return hashes;
    }

    /** A filter set with group names (of this kind). */
    private void requireNames(boolean byteGroups) {
        if ((kind & SET) == 0) {
            throw new RibbonException(source + ": this is not a filter set: it has no groups");
        }
        if (groupNames == null) {
            throw new RibbonException(source + ": this filter set has no group names (format version " + version
                    + ", written without them): ask it about a group you name (containsIn)");
        }
        if (hasByteGroups() != byteGroups) {
            throw new RibbonException(source + ": this filter set names its groups by "
                    + (hasByteGroups() ? "byte strings (groupsBytes)" : "64-bit integers (groupsLong)"));
        }
    }

    /** A filter set with group names and keys of this kind. */
    private void requireGroupsOf(boolean byteKeys) {
        requireNames(hasByteGroups());
        if (p.byteKeys != byteKeys) {
            throw new RibbonException(source + ": the filter set was built from "
                    + (p.byteKeys ? "byte-string keys" : "64-bit integer keys")
                    + " and cannot be queried with " + (byteKeys ? "byte-string keys" : "integer keys"));
        }
    }

    /** Membership of every key: {@code result[i] = contains(keys[i])}. */
    public boolean[] contains(long[] keys) {
        requireMembership(0);
        boolean[] out = new boolean[keys.length];
        batched(keys.length, hashesOf(keys), out, null);
        return out;
    }

    /** Membership of every key: {@code result[i] = contains(keys[i])}. */
    public boolean[] contains(byte[][] keys) {
        requireMembership(BYTE_KEYS);
        boolean[] out = new boolean[keys.length];
        batched(keys.length, hashesOf(keys), out, null);
        return out;
    }

    /** The value of every key: {@code result[i] = lookup(keys[i])}. */
    public int[] lookup(long[] keys) {
        requireKind(RETRIEVAL);
        int[] out = new int[keys.length];
        batched(keys.length, hashesOf(keys), null, out);
        return out;
    }

    /** The value of every key: {@code result[i] = lookup(keys[i])}. */
    public int[] lookup(byte[][] keys) {
        requireKind(BYTE_KEYS | RETRIEVAL);
        int[] out = new int[keys.length];
        batched(keys.length, hashesOf(keys), null, out);
        return out;
    }

    /** Writes the key hashes of keys [from, from + count) to hashes[0, count). */
    private interface BlockHashes {
        void hash(int from, int count, long[] hashes);
    }

    private BlockHashes hashesOf(long[] keys) {
        return (from, count, hashes) -> Lanes.CHOSEN.hashLongs(keys, from, count, seedMixed, hashes);
    }

    private BlockHashes hashesOf(byte[][] keys) {
        return (from, count, hashes) -> {
            for (int i = 0; i < count; i++) hashes[i] = Hashing.hashBytes(keys[from + i], p.seed);
        };
    }

    /**
     * Every batched call: n keys in blocks of Query64.BLOCK, hashed, then answered as membership
     * (into found) or values (into values, where found is null).
     */
    private void batched(int n, BlockHashes keyHashes, boolean[] found, int[] values) {
        Batch batch = new Batch(n);
        for (int from = 0; from < n; from += Query64.BLOCK) {
            int count = Math.min(Query64.BLOCK, n - from);
            keyHashes.hash(from, count, batch.hashes);
            if (found != null) {
                containsHashes(batch, count, found, from);
            } else {
                lookupHashes(batch, count, values, from);
            }
        }
    }

    /** Small, so that the JIT inlines it into each query; the message is built out of line. */
    private void requireKind(int wanted) {
        if (kind != wanted) throw kindError((wanted & BYTE_KEYS) != 0, (wanted & RETRIEVAL) != 0);
    }

    private void requireMembership(int wanted) {
        if (membershipKind != wanted) throw kindError((wanted & BYTE_KEYS) != 0, false);
    }

    /** A filter set with groups and keys of these kinds. */
    private void requireSet(boolean byteGroups, int keyKind) {
        if (kind != (SET | keyKind)) {
            if ((kind & SET) == 0) {
                throw new RibbonException(source + ": this is not a filter set: query it with contains or lookup");
            }
            throw kindError((keyKind & BYTE_KEYS) != 0, false);
        }
        if (hasByteGroups() != byteGroups) {
            throw new RibbonException(source + ": this filter set names its groups by "
                    + (hasByteGroups() ? "byte strings" : "64-bit integers") + " and cannot be queried with groups named by "
                    + (byteGroups ? "byte strings" : "64-bit integers"));
        }
    }

    private RibbonException kindError(boolean byteKeys, boolean retrieval) {
        if ((kind & SET) != 0 && p.byteKeys == byteKeys) {
            return new RibbonException(source + ": this is a filter set: query it by group and key (containsIn)");
        }
        if (p.byteKeys != byteKeys) {
            return new RibbonException(source + ": the filter was built from "
                    + (p.byteKeys ? "byte-string keys" : "64-bit integer keys")
                    + " and cannot be queried with " + (byteKeys ? "byte-string keys" : "integer keys"));
        }
        return new RibbonException(source + (retrieval
                ? ": lookup is for retrieval structures; this file is a filter"
                : ": a retrieval structure (built with values) without check bits answers lookups, "
                        + "not membership"));
    }

    /** Do a stored result's top checkBits hold the key hash's fingerprint (as the C++ reader)? */
    private boolean checkPasses(long keyHash, int stored) {
        return p.checkBits == 0 || stored >>> p.valueBits() == Rows.fingerprint(keyHash, p.checkBits);
    }

    private OptionalInt foundValue(long keyHash) {
        int stored = lookupHash(keyHash);
        return checkPasses(keyHash, stored) ? OptionalInt.of(stored & valueMask) : OptionalInt.empty();
    }

    /**
     * Every query walks the layers (LayerQuery#walk): the plan's (called here, not through one
     * more method: each level of calls less leaves C2 more of its inlining depth for
     * VectorLanes' calls), else the file's ({@link #fileResidue}).
     */
    private boolean containsHash(long keyHash) {
        if (p.checkBits != 0) return checkPasses(keyHash, lookupHash(keyHash));
        return (plan != null ? plan.residue(keyHash, rhsMask, -1) : fileResidue(keyHash, rhsMask, -1)) == 0;
    }

    private int lookupHash(long keyHash) {
        return plan != null ? plan.residue(keyHash, 0, 0) : fileResidue(keyHash, 0, 0);
    }

    /** The walk through the file's layers, where it has no plan. */
    private int fileResidue(long keyHash, int mask, int absent) {
        if (layers.length == 0) return absent;
        long hash = LayerQuery.layer0Hash(layers, keyHash);
        return LayerQuery.walk(layers, hash, layers[0].start(hash), mask, absent);
    }

    /** A batched call's scratch: a block of key hashes, their starts and residues. */
    private static final class Batch {
        final long[] hashes;
        final long[] starts;
        final int[] residues;

        Batch(int keys) {
            int n = Math.min(keys, Query64.BLOCK);
            hashes = new long[n];
            starts = new long[n];
            residues = new int[n];
        }
    }

    /** The walk of batch.hashes[i] (overwritten) to batch.residues[i], i below count. */
    private void residues(Batch batch, int count, int mask, int absent) {
        if (plan != null) {
            plan.residues(batch.hashes, count, mask, absent, batch.starts, batch.residues);
            return;
        }
        for (int i = 0; i < count; i++) batch.residues[i] = fileResidue(batch.hashes[i], mask, absent);
    }

    /** containsHash of batch.hashes[i] in out[from + i], i below count. */
    private void containsHashes(Batch batch, int count, boolean[] out, int from) {
        if (p.checkBits != 0) {
            for (int i = 0; i < count; i++) out[from + i] = containsHash(batch.hashes[i]);
            return;
        }
        residues(batch, count, rhsMask, -1);
        for (int i = 0; i < count; i++) out[from + i] = batch.residues[i] == 0;
    }

    /** The values of batch.hashes[i] in out[from + i], i below count. */
    private void lookupHashes(Batch batch, int count, int[] out, int from) {
        residues(batch, count, 0, 0);
        for (int i = 0; i < count; i++) out[from + i] = batch.residues[i] & valueMask;
    }
}
