package dev.ribbon;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import net.jpountz.xxhash.StreamingXXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * A read-only file mapped in windows of 2^chunkBits bytes, read by 64-bit offsets, so files
 * larger than 2 GiB work. The format aligns every 4-, 8- and 16-byte word to its size, so an
 * aligned read never straddles two windows.
 */
final class MappedFile {
    /** 1 GiB windows: well under a ByteBuffer's 2 GiB limit. */
    static final int DEFAULT_CHUNK_BITS = 30;

    private final ByteBuffer[] chunks;
    /** The one window of a file that fits in one, else null. */
    private final ByteBuffer single;
    private final int chunkBits;
    private final long chunkMask;
    private final long size;

    private MappedFile(ByteBuffer[] chunks, int chunkBits, long size) {
        this.chunks = chunks;
        this.single = chunks.length == 1 ? chunks[0] : null;
        this.chunkBits = chunkBits;
        this.chunkMask = (1L << chunkBits) - 1;
        this.size = size;
    }

    /** Maps a regular file; `chunkBits` (at least 6) sets the window size (tests use small ones). */
    static MappedFile map(Path path, int chunkBits) {
        if (!Files.isRegularFile(path)) {
            throw new RibbonException(Files.exists(path)
                    ? "cannot read " + path + ": it is not a regular file, and a filter is a regular file"
                    : "cannot open " + path + ": No such file or directory");
        }
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            long chunkBytes = 1L << chunkBits;
            int count = (int) ((size + chunkBytes - 1) >>> chunkBits);
            ByteBuffer[] chunks = new ByteBuffer[Math.max(count, 1)];
            chunks[0] = ByteBuffer.allocate(0);
            for (int i = 0; i < count; i++) {
                long offset = (long) i << chunkBits;
                MappedByteBuffer window = channel.map(FileChannel.MapMode.READ_ONLY, offset,
                        Math.min(chunkBytes, size - offset));
                chunks[i] = window.order(ByteOrder.LITTLE_ENDIAN);
            }
            return new MappedFile(chunks, chunkBits, size);
        } catch (IOException e) {
            throw new RibbonException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    long size() {
        return size;
    }

    /** Is the whole file in one window (under 2^chunkBits bytes)? Then {@link #words} works. */
    boolean isSingleWindow() {
        return single != null;
    }

    /** The little-endian 64-bit words of `bytes` bytes at `offset` (8-aligned), of a single window. */
    LongBuffer words(long offset, long bytes) {
        return single.slice((int) offset, (int) bytes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
    }

    long getLong(long offset) {
        if (single != null) return single.getLong((int) offset);  // files under 1 GiB
        return chunks[(int) (offset >>> chunkBits)].getLong((int) (offset & chunkMask));
    }

    int getInt(long offset) {
        if (single != null) return single.getInt((int) offset);
        return chunks[(int) (offset >>> chunkBits)].getInt((int) (offset & chunkMask));
    }

    byte getByte(long offset) {
        return chunks[(int) (offset >>> chunkBits)].get((int) (offset & chunkMask));
    }

    /** Copies {@code dst.length} bytes at {@code offset} into {@code dst} (across windows). */
    void read(long offset, byte[] dst) {
        for (int done = 0; done < dst.length; ) {
            long at = offset + done;
            ByteBuffer chunk = chunks[(int) (at >>> chunkBits)];
            int from = (int) (at & chunkMask);
            int n = Math.min(dst.length - done, chunk.limit() - from);
            chunk.duplicate().position(from).get(dst, done, n);
            done += n;
        }
    }

    /** XXH64 with seed 0 of `length` bytes at `offset` (the format's checksum). */
    long checksum(long offset, long length) {
        int first = (int) (offset >>> chunkBits);
        int inChunk = (int) (offset & chunkMask);
        if (length == 0 || inChunk + length <= (1L << chunkBits)) {
            ByteBuffer chunk = length == 0 ? chunks[0] : chunks[first];
            return Hashing.XXH64.hash(chunk, length == 0 ? 0 : inChunk, (int) length, 0);
        }
        // A range across windows: streamed through a small buffer.
        try (StreamingXXHash64 stream = XXHashFactory.fastestJavaInstance().newStreamingHash64(0)) {
            byte[] buffer = new byte[1 << 16];
            for (long done = 0; done < length; ) {
                long at = offset + done;
                ByteBuffer chunk = chunks[(int) (at >>> chunkBits)];
                int from = (int) (at & chunkMask);
                int n = (int) Math.min(Math.min(buffer.length, length - done), chunk.limit() - from);
                chunk.duplicate().position(from).get(buffer, 0, n);
                stream.update(buffer, 0, n);
                done += n;
            }
            return stream.getValue();
        }
    }
}
