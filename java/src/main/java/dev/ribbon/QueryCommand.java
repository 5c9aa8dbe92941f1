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
import java.util.OptionalInt;

/**
 * {@code java -jar ribbon.jar query FILTER [-i FILE ...|-] [--format F] [--count] [--values
 * [--absent TEXT]] [--group G | --groups-of] [KEY ...]}: the options of {@code ribbon query} with its output and exit
 * status (0 a key positive, or found; 1 none; 2 an error, reported as {@code ribbon: ...}).
 * With {@code --groups-of} (a filter set with group names) every key gets a line {@code
 * KEY<TAB>GROUP<TAB>GROUP...}: the groups that may hold it, in the order of their names (integer
 * groups in decimal, byte-string groups as their bytes), the key alone where none may.
 */
public final class QueryCommand {
    /** The charset the JVM decoded the arguments with: encoding with it gives their bytes back. */
    private static final Charset ARGUMENT_CHARSET =
            Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));

    private String filterPath;
    private final List<String> inputs = new ArrayList<>();
    private final List<String> keys = new ArrayList<>();
    private KeyInput.Format format = KeyInput.Format.LINES;
    private boolean count;
    private boolean values;
    /** --absent: printed as the value of keys whose check bits do not match; null: not given. */
    private String absent;
    /** --group: the group of a filter set the keys are asked about; null: not given. */
    private String group;
    private byte[] groupBytes;
    private long groupNumber;
    /** --groups-of: list each key's groups. */
    private boolean groupsOf;
    /** --groups-of: the set's group names as printed (decimal, or the name's bytes). */
    private byte[][] groupTexts;
    private RibbonFilter filter;
    private OutputStream out;
    private long queried;
    private long positive;

    /** Runs the command on its arguments (after "query") and returns the exit status. */
    public static int run(String[] args, OutputStream stdout, PrintStream stderr) {
        QueryCommand command = new QueryCommand();
        String problem;
        try {
            command.parse(args);
            return command.execute(stdout);
        } catch (RibbonException | IOException | InvalidPathException e) {  // InvalidPath: a NUL in a name
            problem = e.getMessage();
        } catch (OutOfMemoryError e) {
            problem = "out of memory";
        }
        command.flushAnswers();
        stderr.println("ribbon: " + problem);
        return 2;
    }

    private void parse(String[] args) {
        boolean optionsDone = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (optionsDone || !a.startsWith("-") || a.equals("-")) {
                if (filterPath == null) filterPath = a; else keys.add(a);
            } else if (a.equals("--")) {
                optionsDone = true;
            } else if (a.equals("-i") || a.equals("--input") || a.equals("--format") || a.equals("--absent")
                    || a.equals("--group")) {
                if (i + 1 == args.length) throw new RibbonException(a + " needs an argument");
                optionValue(a, args[++i]);
            } else if (a.startsWith("--input=") || a.startsWith("--format=") || a.startsWith("--absent=")
                    || a.startsWith("--group=")) {
                optionValue(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
            } else if (a.equals("-c") || a.equals("--count")) {
                count = true;
            } else if (a.equals("--values")) {
                values = true;
            } else if (a.equals("--groups-of")) {
                groupsOf = true;
            } else if (!a.equals("--progress")) {
                throw new RibbonException("unknown option " + a);
            }
        }
        if (filterPath == null) throw new RibbonException("query: a filter file is required");
        if (count && values) throw new RibbonException("--count excludes --values");
        if (absent != null && !values) throw new RibbonException("--absent needs --values");
        if (group != null && values) throw new RibbonException("--group excludes --values");
        if (groupsOf && (values || count || group != null)) {
            throw new RibbonException("--groups-of excludes --values, --count and --group");
        }
    }

    private void optionValue(String option, String value) {
        if (option.equals("--absent")) {
            absent = value;
        } else if (option.equals("--group")) {
            group = value;
        } else if (option.equals("--format")) {
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
        // As ribbon query: the argument keys checked and answered, then every input checked
        // before any is read, then the inputs chunk by chunk. An error leaves the answers
        // before it in `out` (run() flushes them) and none of its chunk.
        if (!keys.isEmpty()) answer(argumentChunk());
        for (String input : inputs) KeyInput.checkReadable(input);
        int chunkBytes = KeyInput.chunkBytes();
        for (String input : inputs) {
            try (KeyInput in = new KeyInput(input, format, chunkBytes)) {
                for (KeyInput.Chunk chunk; (chunk = in.next()) != null; ) answer(chunk);
            }
        }
        if (count) out.write((queried + " queried, " + positive + " positive\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return positive > 0 ? 0 : 1;
    }

    /** Writes what was answered before an error, as ribbon query's output ends at one. */
    private void flushAnswers() {
        if (out == null) return;
        try {
            out.flush();
        } catch (IOException e) {
            // stdout itself failed: nothing more can be written to it
        }
    }

    /** The argument keys as one chunk (texts in the charset they were decoded from). */
    private KeyInput.Chunk argumentChunk() {
        KeyInput.Chunk chunk = new KeyInput.Chunk();
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            byte[] text = key.getBytes(ARGUMENT_CHARSET);
            if (format == KeyInput.Format.LINES) {
                chunk.add(text, 0);
                continue;
            }
            Long v = format == KeyInput.Format.U64 ? KeyInput.parseDecimal(key) : KeyInput.parseHex(key);
            if (v == null) {
                throw new RibbonException("key argument " + (i + 1) + ": " + (format == KeyInput.Format.U64
                        ? "invalid u64 key " + KeyInput.quote(key) + ": expected a decimal integer below 2^64"
                        : KeyInput.hexProblem(key)));
            }
            chunk.add(text, v);
        }
        return chunk;
    }

    /**
     * Queries a chunk's keys and writes the positives (or each key found and its value: every
     * key without check bits; with --absent, the others too).
     */
    private void answer(KeyInput.Chunk c) throws IOException {
        byte[][] texts = Arrays.copyOf(c.texts, c.count);
        if (groupsOf) {
            int[][] groups = format == KeyInput.Format.LINES ? filter.groupsOf(texts)
                    : filter.groupsOf(Arrays.copyOf(c.values, c.count));
            for (int i = 0; i < c.count; i++) {
                if (groups[i].length > 0) positive++;
                out.write(text(c, i));
                for (int j = 0; j < groups[i].length; j++) {
                    out.write('\t');
                    out.write(groupTexts[groups[i][j]]);
                }
                out.write('\n');
            }
        } else if (values) {
            for (int i = 0; i < c.count; i++) {
                OptionalInt value = format == KeyInput.Format.LINES ? filter.find(texts[i]) : filter.find(c.values[i]);
                if (value.isPresent()) positive++;
                if (value.isEmpty() && absent == null) continue;
                out.write(text(c, i));
                out.write('\t');
                out.write(value.isPresent() ? Integer.toUnsignedString(value.getAsInt()).getBytes(StandardCharsets.US_ASCII)
                                            : absent.getBytes(ARGUMENT_CHARSET));
                out.write('\n');
            }
        } else {
            boolean[] found = group != null ? containsInGroup(c, texts)
                    : format == KeyInput.Format.LINES
                    ? filter.contains(texts) : filter.contains(Arrays.copyOf(c.values, c.count));
            for (int i = 0; i < c.count; i++) {
                if (!found[i]) continue;
                positive++;
                if (count) continue;
                out.write(text(c, i));
                out.write('\n');
            }
        }
        queried += c.count;
    }

    /** The chunk's keys asked in the --group of a filter set. */
    private boolean[] containsInGroup(KeyInput.Chunk c, byte[][] texts) {
        boolean[] found = new boolean[c.count];
        boolean lines = format == KeyInput.Format.LINES;
        for (int i = 0; i < c.count; i++) {
            if (filter.hasByteGroups()) {
                found[i] = lines ? filter.containsIn(groupBytes, texts[i]) : filter.containsIn(groupBytes, c.values[i]);
            } else {
                found[i] = lines ? filter.containsIn(groupNumber, texts[i]) : filter.containsIn(groupNumber, c.values[i]);
            }
        }
        return found;
    }

    /** Key i as printed: its text, or the decimal u64 value. */
    private byte[] text(KeyInput.Chunk c, int i) {
        return c.texts[i] != null ? c.texts[i] : Long.toUnsignedString(c.values[i]).getBytes(StandardCharsets.US_ASCII);
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
        if (f.isRetrieval() && !values && f.checkBits() == 0) {
            throw new RibbonException(path + ": a retrieval structure (built with values) answers lookups, "
                    + "not membership: use 'query --values'");
        }
        if (absent != null && f.checkBits() == 0) {
            throw new RibbonException(path + ": --absent needs a retrieval structure with check bits (built "
                    + "with --check-bits): without them every key gets a value");
        }
        if (!f.isRetrieval() && values) {
            throw new RibbonException(path + ": --values is for retrieval structures (built with --values or "
                    + "--value-file); this file is a filter");
        }
        if (groupsOf) {
            if (!f.isSet()) {
                throw new RibbonException(path + ": --groups-of is for filter sets (built with `ribbon build --groups -o`)");
            }
            if (!f.hasGroupNames()) {
                throw new RibbonException(path + ": --groups-of needs a filter set with group names (this one was "
                        + "written without them: format version " + f.formatVersion() + "); ask with --group GROUP");
            }
            if (f.hasByteGroups()) {
                groupTexts = f.groupsBytes();
            } else {
                long[] names = f.groupsLong();
                groupTexts = new byte[names.length][];
                for (int i = 0; i < names.length; i++) {
                    groupTexts[i] = Long.toUnsignedString(names[i]).getBytes(StandardCharsets.US_ASCII);
                }
            }
            return f;
        }
        if (f.isSet() && group == null) {
            throw new RibbonException(path + ": a filter set answers (group, key): give --group GROUP");
        }
        if (!f.isSet() && group != null) {
            throw new RibbonException(path + ": --group is for filter sets (built with `ribbon build --groups -o`)");
        }
        if (group != null) {
            groupBytes = group.getBytes(ARGUMENT_CHARSET);
            if (!f.hasByteGroups()) {
                Long number = KeyInput.parseDecimal(group);
                if (number == null) {
                    throw new RibbonException("--group: invalid u64 group " + KeyInput.quote(group)
                            + ": expected a decimal integer below 2^64");
                }
                groupNumber = number;
            }
        }
        return f;
    }
}
