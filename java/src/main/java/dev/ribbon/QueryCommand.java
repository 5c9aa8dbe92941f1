package dev.ribbon;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code java -jar ribbon.jar query FILTER [-i FILE ...|-] [--format F] [--count] [--values]
 * [KEY ...]}: the options of {@code ribbon query} with its output and exit status (0 a key
 * positive, or any key looked up; 1 none; 2 an error, reported as {@code ribbon: ...}).
 */
public final class QueryCommand {
    private static final int BATCH = 4096;
    /** The charset the JVM decoded the arguments with: encoding with it gives their bytes back. */
    private static final Charset ARGUMENT_CHARSET =
            Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));

    private String filterPath;
    private final List<String> inputs = new ArrayList<>();
    private final List<String> keys = new ArrayList<>();
    private KeyInput.Format format = KeyInput.Format.LINES;
    private boolean count;
    private boolean values;
    private RibbonFilter filter;
    private OutputStream out;
    private long queried;
    private long positive;

    /** Runs the command on its arguments (after "query") and returns the exit status. */
    public static int run(String[] args, OutputStream stdout, PrintStream stderr) {
        QueryCommand command = new QueryCommand();
        try {
            command.parse(args);
            return command.execute(stdout);
        } catch (RibbonException | IOException e) {
            stderr.println("ribbon: " + e.getMessage());
            return 2;
        } catch (OutOfMemoryError e) {
            stderr.println("ribbon: out of memory");
            return 2;
        } catch (InvalidPathException e) {  // e.g. a NUL byte in a file name
            stderr.println("ribbon: " + e.getMessage());
            return 2;
        }
    }

    private void parse(String[] args) {
        boolean optionsDone = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (optionsDone || !a.startsWith("-") || a.equals("-")) {
                if (filterPath == null) filterPath = a; else keys.add(a);
            } else if (a.equals("--")) {
                optionsDone = true;
            } else if (a.equals("-i") || a.equals("--input") || a.equals("--format")) {
                if (i + 1 == args.length) throw new RibbonException(a + " needs an argument");
                optionValue(a, args[++i]);
            } else if (a.startsWith("--input=") || a.startsWith("--format=")) {
                optionValue(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
            } else if (a.equals("-c") || a.equals("--count")) {
                count = true;
            } else if (a.equals("--values")) {
                values = true;
            } else if (!a.equals("--progress")) {
                throw new RibbonException("unknown option " + a);
            }
        }
        if (filterPath == null) throw new RibbonException("query: a filter file is required");
        if (count && values) throw new RibbonException("--count excludes --values");
    }

    private void optionValue(String option, String value) {
        if (option.equals("--format")) {
            switch (value) {
                case "lines": format = KeyInput.Format.LINES; break;
                case "u64": format = KeyInput.Format.U64; break;
                case "hex64": format = KeyInput.Format.HEX64; break;
                default: throw new RibbonException("--format: " + value + " not in {lines, u64, hex64}");
            }
        } else {
            inputs.add(value);
        }
    }

    private int execute(OutputStream stdout) throws IOException {
        if (inputs.isEmpty() && keys.isEmpty()) {
            if (System.console() != null) {
                throw new RibbonException("no keys: give -i FILE, keys as arguments, or pipe keys into stdin");
            }
            inputs.add("-");
        }
        filter = openFor(filterPath);
        out = new BufferedOutputStream(stdout, 1 << 16);
        Batch batch = new Batch();
        for (int i = 0; i < keys.size(); i++) batch.addArgument(keys.get(i), i + 1);
        batch.flush();
        for (String input : inputs) {
            try (KeyInput in = new KeyInput(input, format)) {
                readAll(in, batch);
            }
        }
        if (count) out.write((queried + " queried, " + positive + " positive\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        if (values) return queried > 0 ? 0 : 1;
        return positive > 0 ? 0 : 1;
    }

    private void readAll(KeyInput in, Batch batch) throws IOException {
        if (format == KeyInput.Format.LINES) {
            for (byte[] line; (line = in.nextLine()) != null; ) batch.addBytes(line);
        } else {
            long[] value = new long[1];
            byte[][] text = new byte[1][];
            while (in.nextInteger(value, text)) {
                batch.addInteger(value[0], format == KeyInput.Format.U64
                        ? Long.toUnsignedString(value[0]).getBytes(StandardCharsets.US_ASCII) : text[0]);
            }
        }
        batch.flush();
    }

    /** Loads the filter and checks it against the key format and --values, as ribbon query does. */
    private RibbonFilter openFor(String path) {
        RibbonFilter f = RibbonFilter.open(Path.of(path));
        boolean wantBytes = format == KeyInput.Format.LINES;
        if (f.hasByteKeys() != wantBytes) {
            throw new RibbonException(path + ": the filter was built from "
                    + (f.hasByteKeys() ? "byte-string keys (--format lines)"
                                       : "64-bit integer keys (--format u64 or --format hex64)")
                    + " and cannot be queried with --format " + format.name().toLowerCase());
        }
        if (f.isRetrieval() && !values) {
            throw new RibbonException(path + ": a retrieval structure (built with values) answers lookups, "
                    + "not membership: use 'query --values'");
        }
        if (!f.isRetrieval() && values) {
            throw new RibbonException(path + ": --values is for retrieval structures (built with --values or "
                    + "--value-file); this file is a filter");
        }
        return f;
    }

    /** Keys gathered for one batched call, with the text each prints as. */
    private final class Batch {
        private final byte[][] texts = new byte[BATCH][];
        private final byte[][] byteKeys = new byte[BATCH][];
        private final long[] intKeys = new long[BATCH];
        private int size;

        void addArgument(String key, int position) {
            byte[] text = key.getBytes(ARGUMENT_CHARSET);
            if (format == KeyInput.Format.LINES) {
                addBytes(text);
                return;
            }
            Long v = format == KeyInput.Format.U64 ? KeyInput.parseDecimal(key) : KeyInput.parseHex(key);
            if (v == null) {
                throw new RibbonException("key argument " + position + ": " + (format == KeyInput.Format.U64
                        ? "invalid u64 key '" + key + "': expected a decimal integer below 2^64"
                        : KeyInput.hexProblem(key)));
            }
            addInteger(v, text);
        }

        void addBytes(byte[] key) {
            texts[size] = key;
            byteKeys[size++] = key;
            if (size == BATCH) flush();
        }

        void addInteger(long key, byte[] text) {
            texts[size] = text;
            intKeys[size++] = key;
            if (size == BATCH) flush();
        }

        void flush() {
            try {
                if (values) writeValues(); else writePositives();
            } catch (IOException e) {
                throw new RibbonException("cannot write to stdout: " + e.getMessage(), e);
            }
            queried += size;
            size = 0;
        }

        private void writePositives() throws IOException {
            boolean[] found = format == KeyInput.Format.LINES
                    ? filter.contains(Arrays.copyOf(byteKeys, size))
                    : filter.contains(Arrays.copyOf(intKeys, size));
            for (int i = 0; i < size; i++) {
                if (!found[i]) continue;
                positive++;
                if (count) continue;
                out.write(texts[i]);
                out.write('\n');
            }
        }

        private void writeValues() throws IOException {
            int[] stored = format == KeyInput.Format.LINES
                    ? filter.lookup(Arrays.copyOf(byteKeys, size))
                    : filter.lookup(Arrays.copyOf(intKeys, size));
            for (int i = 0; i < size; i++) {
                out.write(texts[i]);
                out.write(('\t' + Integer.toUnsignedString(stored[i]) + '\n').getBytes(StandardCharsets.US_ASCII));
            }
        }
    }
}
