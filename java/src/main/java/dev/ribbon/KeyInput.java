package dev.ribbon;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads the keys of one input of {@code ribbon query}: text lines (as bytes, without the
 * {@code \n} and one trailing {@code \r}; the last line needs no {@code \n}), hex64 lines, or
 * little-endian u64 integers. Errors name the input and the line or byte offset.
 */
final class KeyInput implements AutoCloseable {
    /** The key formats of the command (--format). */
    enum Format { LINES, U64, HEX64 }

    private final InputStream in;
    private final String name;
    private final Format format;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private long lineNumber;
    private long byteOffset;

    KeyInput(String path, Format format) {
        this.name = path.equals("-") ? "<stdin>" : path;
        this.in = new BufferedInputStream(path.equals("-") ? System.in : open(path), 1 << 16);
        this.format = format;
    }

    private static InputStream open(String path) {
        try {
            return Files.newInputStream(Path.of(path));
        } catch (NoSuchFileException e) {
            throw new RibbonException("cannot open " + path + ": No such file or directory");
        } catch (IOException e) {
            throw new RibbonException("cannot open " + path + ": " + e.getMessage(), e);
        }
    }

    /** The next line's bytes without its line end, or null at the end of the input. */
    byte[] nextLine() throws IOException {
        line.reset();
        int c;
        boolean any = false;
        while ((c = in.read()) >= 0) {
            any = true;
            if (c == '\n') break;
            line.write(c);
        }
        if (!any) return null;
        lineNumber++;
        byte[] bytes = line.toByteArray();
        int length = bytes.length;
        if (length > 0 && bytes[length - 1] == '\r') length--;
        return length == bytes.length ? bytes : Arrays.copyOf(bytes, length);
    }

    /** The next integer key as {@code value[0]}; false at the end (u64 and hex64 inputs). */
    boolean nextInteger(long[] value, byte[][] text) throws IOException {
        if (format == Format.U64) return nextU64(value);
        byte[] bytes = nextLine();
        if (bytes == null) return false;
        text[0] = bytes;
        String s = new String(bytes, StandardCharsets.ISO_8859_1);
        Long parsed = parseHex(s);
        if (parsed == null) throw new RibbonException(name + ":" + lineNumber + ": " + hexProblem(s));
        value[0] = parsed;
        return true;
    }

    private boolean nextU64(long[] value) throws IOException {
        byte[] eight = in.readNBytes(8);
        if (eight.length == 0) return false;
        if (eight.length < 8) {
            throw new RibbonException(name + ": size is not a multiple of 8 bytes (--format u64): "
                    + eight.length + " trailing bytes at offset " + byteOffset);
        }
        long v = 0;
        for (int i = 7; i >= 0; i--) v = (v << 8) | (eight[i] & 0xFF);
        value[0] = v;
        byteOffset += 8;
        return true;
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
        return "invalid hex64 key '" + text + "': expected 1 to 16 hex digits, optionally after 0x";
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
