package dev.ribbon;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads the keys of one input of {@code ribbon query} in the chunks the C++ tool reads
 * (tools/input.cpp): up to RIBBON_CLI_CHUNK_BYTES (8 MiB) at a time, cut after the last
 * {@code \n} (u64: after the last whole key), so that an error stops the output where
 * {@code ribbon query}'s stops: after the chunks before the one that holds it. Keys: text lines
 * (as bytes, without the {@code \n} and one trailing {@code \r}; the last line needs no
 * {@code \n}), hex64 lines, or little-endian u64 integers. Errors name the input and the line
 * or byte offset.
 */
final class KeyInput implements AutoCloseable {
    /** The key formats of the command (--format). */
    enum Format { LINES, U64, HEX64 }

    static final int DEFAULT_CHUNK_BYTES = 8 << 20;
    private static final int MIN_CHUNK_BYTES = 16;
    private static final int MAX_CHUNK_BYTES = 1 << 30;

    /** One chunk's keys: texts[i] (the line; null for u64) and values[i] (integer formats). */
    static final class Chunk {
        byte[][] texts = new byte[0][];
        long[] values = new long[0];
        int count;

        void add(byte[] text, long value) {
            if (count == texts.length) {
                texts = Arrays.copyOf(texts, Math.max(16, 2 * count));
                values = Arrays.copyOf(values, texts.length);
            }
            texts[count] = text;
            values[count++] = value;
        }
    }

    private final InputStream in;
    private final String name;
    private final Format format;
    private final int chunkBytes;
    private byte[] carry = new byte[0];
    private boolean eof;
    private long lines;
    private long bytesRead;

    KeyInput(String path, Format format, int chunkBytes) {
        this.name = path.equals("-") ? "<stdin>" : path;
        this.in = path.equals("-") ? System.in : open(path);
        this.format = format;
        this.chunkBytes = chunkBytes;
    }

    /** The chunk size: RIBBON_CLI_CHUNK_BYTES if set (clamped to 16 B to 1 GiB), else 8 MiB. */
    static int chunkBytes() {
        String text = System.getenv("RIBBON_CLI_CHUNK_BYTES");
        if (text == null || text.isEmpty()) return DEFAULT_CHUNK_BYTES;
        long value;
        try {
            value = text.chars().allMatch(Character::isDigit) ? Long.parseLong(text) : 0;
        } catch (NumberFormatException e) {
            value = MAX_CHUNK_BYTES;  // digits beyond a long: the largest size
        }
        if (value == 0) throw new RibbonException("RIBBON_CLI_CHUNK_BYTES: not a positive number: '" + text + "'");
        return (int) Math.max(MIN_CHUNK_BYTES, Math.min(value, MAX_CHUNK_BYTES));
    }

    /** Checks that an input can be opened, before any is read (as ribbon query does). */
    static void checkReadable(String path) {
        if (path.equals("-")) return;
        if (Files.isDirectory(Path.of(path))) throw new RibbonException(path + ": is a directory");
        try {
            open(path).close();
        } catch (IOException e) {
            throw new RibbonException("cannot open " + path + ": " + e.getMessage(), e);
        }
    }

    private static InputStream open(String path) {
        try {
            return Files.newInputStream(Path.of(path));
        } catch (NoSuchFileException e) {
            throw new RibbonException("cannot open " + path + ": No such file or directory");
        } catch (AccessDeniedException e) {
            throw new RibbonException("cannot open " + path + ": Permission denied");
        } catch (IOException e) {
            throw new RibbonException("cannot open " + path + ": " + e.getMessage(), e);
        }
    }

    /** The next chunk's keys, or null at the end; a bad key fails the whole chunk. */
    Chunk next() throws IOException {
        byte[] buffer = Arrays.copyOf(carry, Math.max(chunkBytes, 2 * carry.length));
        int size = carry.length;
        int cut;
        for (;;) {
            while (size < buffer.length && !eof) {
                int n = in.read(buffer, size, buffer.length - size);
                if (n < 0) eof = true; else size += n;
            }
            if (eof) {
                cut = size;
                break;
            }
            if (format == Format.U64) {
                cut = size - size % 8;
                break;
            }
            cut = lastNewline(buffer, size) + 1;
            if (cut > 0) break;
            buffer = Arrays.copyOf(buffer, 2 * buffer.length);  // a line longer than the buffer
        }
        bytesRead += size - carry.length;
        carry = Arrays.copyOfRange(buffer, cut, size);
        if (eof && format == Format.U64 && size % 8 != 0) {
            int trailing = size % 8;
            throw new RibbonException(name + ": size " + bytesRead + " bytes is not a multiple of 8 (u64 keys are "
                    + "8-byte integers): " + trailing + " trailing bytes at offset " + (bytesRead - trailing));
        }
        if (cut == 0) return null;
        return format == Format.U64 ? integers(buffer, cut) : lines(buffer, cut);
    }

    private static int lastNewline(byte[] buffer, int size) {
        for (int i = size - 1; i >= 0; i--) {
            if (buffer[i] == '\n') return i;
        }
        return -1;
    }

    private static Chunk integers(byte[] data, int size) {
        Chunk c = new Chunk();
        ByteBuffer words = ByteBuffer.wrap(data, 0, size).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at < size; at += 8) c.add(null, words.getLong(at));
        return c;
    }

    private Chunk lines(byte[] data, int size) {
        Chunk c = new Chunk();
        for (int begin = 0; begin < size; ) {
            int end = begin;
            while (end < size && data[end] != '\n') end++;
            int length = end - begin;
            if (length > 0 && data[end - 1] == '\r') length--;
            byte[] line = Arrays.copyOfRange(data, begin, begin + length);
            long value = 0;
            if (format == Format.HEX64) {
                String text = new String(line, StandardCharsets.ISO_8859_1);
                Long parsed = parseHex(text);
                if (parsed == null) throw new RibbonException(name + ":" + (lines + c.count + 1) + ": " + hexProblem(text));
                value = parsed;
            }
            c.add(line, value);
            begin = end + 1;
        }
        lines += c.count;
        return c;
    }

    /** A hex64 key: optional 0x or 0X, 1 to 16 hex digits; null if the text is not one. */
    static Long parseHex(String text) {
        String digits = text.startsWith("0x") || text.startsWith("0X") ? text.substring(2) : text;
        if (digits.isEmpty() || digits.length() > 16) return null;
        long v = 0;
        for (int i = 0; i < digits.length(); i++) {
            int d = Character.digit(digits.charAt(i), 16);
            if (d < 0 || digits.charAt(i) > 'f') return null;
            v = (v << 4) | d;
        }
        return v;
    }

    static String hexProblem(String text) {
        if (text.isEmpty()) return "empty line: hex64 input needs one hex number per line";
        return "invalid hex64 key " + quote(text) + ": expected 1 to 16 hex digits with an optional 0x prefix";
    }

    /** Text for a message: quoted, at most 40 characters, others as \\xNN (as ribbon's). */
    static String quote(String text) {
        StringBuilder out = new StringBuilder("'");
        for (int i = 0; i < text.length() && i < 40; i++) {
            char c = text.charAt(i);
            if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') out.append(c);
            else out.append(String.format("\\x%02x", c & 0xFF));
        }
        return out.append(text.length() > 40 ? "...'" : "'").toString();
    }

    /** A u64 key written in decimal (below 2^64); null if the text is not one. */
    static Long parseDecimal(String text) {
        if (text.isEmpty() || text.length() > 20) return null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') return null;
        }
        try {
            return Long.parseUnsignedLong(text);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    @Override
    public void close() throws IOException {
        if (in != System.in) in.close();
    }
}
