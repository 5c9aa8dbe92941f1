package dev.ribbon;

import java.util.Arrays;
import java.util.function.Function;

/**
 * A filter set's group-names section (docs/format.md, section 12, "Group names"): checked when
 * the file is opened ({@link #check}), streaming, so that a file's names cost no memory until
 * they are asked for; decoded on demand ({@link #longs}, {@link #bytes}).
 */
final class GroupNames {
    private final MappedFile f;
    private final long offset;
    private final long length;
    /** 1: names are integers, 2: byte strings. */
    final int groupKind;
    /** The names in the section (at least the header's group_count). */
    final long count;

    private GroupNames(MappedFile f, long offset, long length, int groupKind, long count) {
        this.f = f;
        this.offset = offset;
        this.length = length;
        this.groupKind = groupKind;
        this.count = count;
    }

    /**
     * Checks the payload of {@code length} bytes at {@code offset}: the count, then the names,
     * strictly ascending, canonically encoded, ending with the payload, at least
     * {@code groupCount} of them. {@code fail} makes the exception of a problem.
     */
    static GroupNames check(MappedFile f, long offset, long length, int groupKind, long groupCount,
            Function<String, RibbonException> fail) {
        Reader in = new Reader(f, offset, length, fail);
        long count = in.count();
        in.names(count, groupKind, null, null);
        if (in.at != in.end) throw fail.apply("group names: " + (in.end - in.at) + " bytes after the last name");
        if (Long.compareUnsigned(count, groupCount) < 0) {
            throw fail.apply("group names: " + Long.toUnsignedString(count) + " names for "
                    + Long.toUnsignedString(groupCount) + " groups (a set names every group it holds)");
        }
        return new GroupNames(f, offset, length, groupKind, count);
    }

    /** Integer names, ascending (as unsigned 64-bit integers). */
    long[] longs(Function<String, RibbonException> fail) {
        Reader in = new Reader(f, offset, length, fail);
        long[] out = new long[arrayLength(in.count(), fail)];
        in.names(out.length, groupKind, out, null);
        return out;
    }

    /** Byte-string names, ascending (unsigned byte order). */
    byte[][] bytes(Function<String, RibbonException> fail) {
        Reader in = new Reader(f, offset, length, fail);
        byte[][] out = new byte[arrayLength(in.count(), fail)][];
        in.names(out.length, groupKind, null, out);
        return out;
    }

    private static int arrayLength(long count, Function<String, RibbonException> fail) {
        if (Long.compareUnsigned(count, Integer.MAX_VALUE - 8) > 0) {
            throw fail.apply("group names: " + Long.toUnsignedString(count) + " names, more than a Java array holds");
        }
        return (int) count;
    }

    /** Reads a payload front to back; every read is bounded by its end. */
    private static final class Reader {
        private final MappedFile f;
        private final Function<String, RibbonException> fail;
        final long end;
        long at;

        Reader(MappedFile f, long offset, long length, Function<String, RibbonException> fail) {
            this.f = f;
            this.fail = fail;
            this.at = offset;
            this.end = offset + length;
        }

        long count() {
            if (end - at < 8) throw fail.apply("group names: truncated (no count)");
            long count = f.getLong(at);
            at += 8;
            // Every name takes at least a byte: a larger count cannot be right.
            if (Long.compareUnsigned(count, end - at) > 0) {
                throw fail.apply("group names: " + Long.toUnsignedString(count) + " names in " + (end - at) + " bytes");
            }
            return count;
        }

        /** An LEB128 varint: at most 10 bytes and 64 bits, no superfluous zero byte. */
        long varint() {
            long value = 0;
            for (int i = 0; ; i++) {
                if (at == end) throw fail.apply("group names: truncated (a varint runs past the end)");
                int b = f.getByte(at++) & 0xFF;
                if (i == 9 && b > 1) throw fail.apply("group names: a varint of more than 64 bits");
                value |= (long) (b & 0x7F) << (7 * i);
                if ((b & 0x80) == 0) {
                    if (b == 0 && i > 0) throw fail.apply("group names: a varint with a superfluous zero byte");
                    return value;
                }
            }
        }

        /** Reads and checks count names, storing them in longs or bytes where not null. */
        void names(long count, int groupKind, long[] longs, byte[][] bytes) {
            if (groupKind == 1) {
                long previous = 0;
                for (long i = 0; i < count; i++) {
                    long value = varint();
                    if (i > 0) {
                        long delta = value;
                        value = previous + delta;
                        if (delta == 0 || Long.compareUnsigned(value, previous) < 0) {
                            throw fail.apply("group names: not strictly ascending (name " + i
                                    + (delta == 0 ? " repeats the one before it)" : " is past 2^64 - 1)"));
                        }
                    }
                    if (longs != null) longs[(int) i] = value;
                    previous = value;
                }
                return;
            }
            // The previous name is previous[0, length): each name overwrites it from its shared prefix
            // on, so that checking takes time in the payload's bytes, not in the names'.
            byte[] previous = new byte[16];
            int length = 0;
            for (long i = 0; i < count; i++) {
                long shared = varint();
                long suffix = varint();
                if (i == 0 && shared != 0) throw fail.apply("group names: the first name shares a prefix (not canonical)");
                if (Long.compareUnsigned(shared, length) > 0) {
                    throw fail.apply("group names: name " + i + " shares " + Long.toUnsignedString(shared)
                            + " bytes of a name of " + length);
                }
                if (Long.compareUnsigned(suffix, end - at) > 0) throw fail.apply("group names: truncated (a name runs past the end)");
                if (shared + suffix > Integer.MAX_VALUE - 8) throw fail.apply("group names: a name too long for a Java array");
                int s = (int) shared;
                if (i > 0) {
                    // Ascending with exactly the longest common prefix shared: the suffix's first byte
                    // is above the previous name's byte there, or the previous name is all shared.
                    if (suffix == 0) {
                        throw fail.apply("group names: not strictly ascending (name " + i
                                + (s == length ? " repeats the one before it)" : " is a prefix of the one before it)"));
                    }
                    if (s < length) {
                        int here = f.getByte(at) & 0xFF, before = previous[s] & 0xFF;
                        if (here == before) throw fail.apply("group names: name " + i + " shares more than its stated prefix (not canonical)");
                        if (here < before) throw fail.apply("group names: not strictly ascending (name " + i + ")");
                    }
                }
                length = s + (int) suffix;
                if (length > previous.length) {
                    previous = Arrays.copyOf(previous, (int) Math.min(Integer.MAX_VALUE - 8, Math.max(length, 2L * previous.length)));
                }
                for (int j = 0; j < suffix; j++) previous[s + j] = f.getByte(at + j);
                at += suffix;
                if (bytes != null) bytes[(int) i] = Arrays.copyOf(previous, length);
            }
        }
    }
}
