package dev.ribbon;

import net.jpountz.xxhash.XXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * The hash functions of the format (docs/format.md, section 7), public for the Spark build's
 * routing (dev.ribbon.spark.Routing), which hashes keys as {@code ribbon build} does.
 */
public final class Hashing {
    /** lz4-java's pure-Java XXH64 (no JNI), the reference algorithm. */
    static final XXHash64 XXH64 = XXHashFactory.fastestJavaInstance().hash64();

    private static final long SEED_MIX_CONSTANT = 0x5851F42D4C957F2DL;
    static final long KEY_MULTIPLIER = 0x9E3779B97F4A7C15L;
    /** mix64's multipliers (VectorLanes uses them too). */
    static final long MIX_1 = 0xFF51AFD7ED558CCDL;
    static final long MIX_2 = 0xC4CEB9FE1A85EC53L;
    private static final long GROUP_SEED = 0x2545F4914F6CDD1DL;

    private Hashing() {}

    /** MurmurHash3's 64-bit finalizer, a bijection. */
    static long mix64(long x) {
        x ^= x >>> 33;
        x *= MIX_1;
        x ^= x >>> 33;
        x *= MIX_2;
        x ^= x >>> 33;
        return x;
    }

    /** The per-filter constant that integer keys are hashed with. */
    public static long seedMix(long seed) {
        return mix64(seed ^ SEED_MIX_CONSTANT) | 1;
    }

    /** Key hash of an integer key. */
    public static long hashLong(long key, long seedMixed) {
        return mix64((key + seedMixed) * KEY_MULTIPLIER);
    }

    /** Key hash of a byte-string key: XXH64 with the file's seed. */
    public static long hashBytes(byte[] key, long seed) {
        return XXH64.hash(key, 0, key.length, seed);
    }

    /** Key hash of the byte-string key {@code bytes[offset, offset + length)}. */
    public static long hashBytes(byte[] bytes, int offset, int length, long seed) {
        return XXH64.hash(bytes, offset, length, seed);
    }

    /**
     * Filter sets (docs/format.md, section 11): the constant that groups named by integers are
     * hashed with ({@link #hashLong} under it), from the filter's {@link #seedMix}.
     */
    public static long groupSeedMix(long seedMixed) {
        return mix64(seedMixed ^ GROUP_SEED) | 1;
    }

    /** Filter sets: the seed that groups named by byte strings are hashed with ({@link #hashBytes}). */
    public static long groupSeed(long seed) {
        return seed ^ GROUP_SEED;
    }

    /** Filter sets: hash of a group named by an integer. */
    public static long groupHashLong(long group, long seedMixed) {
        return hashLong(group, groupSeedMix(seedMixed));
    }

    /** Filter sets: hash of a group named by a byte string. */
    public static long groupHashBytes(byte[] group, long seed) {
        return hashBytes(group, groupSeed(seed));
    }

    /** Filter sets: the hash stored for key hash {@code keyHash} in the group of {@code groupHash}. */
    public static long pairHash(long groupHash, long keyHash) {
        return mix64(keyHash ^ mix64(groupHash + KEY_MULTIPLIER));
    }

    /** A key's hash in the next layer. */
    static long remix(long hash, long salt) {
        return mix64(hash ^ salt);
    }

    /** The high 64 bits of the unsigned 128-bit product (Math.unsignedMultiplyHigh is Java 18). */
    public static long unsignedMultiplyHigh(long a, long b) {
        return Math.multiplyHigh(a, b) + ((a >> 63) & b) + ((b >> 63) & a);
    }
}
