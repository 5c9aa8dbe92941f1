package dev.ribbon;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code java -jar ribbon.jar check-cases DIR}: the Java reader against a corpus of files that
 * each keep or break one rule of the format (C++'s {@code format_rule_cases}). {@code
 * DIR/cases.tsv} has a line per file, {@code FILE<TAB>accept|reject<TAB>RULE_NAME} (FILE relative
 * to DIR unless absolute; blank lines and lines starting with {@code #} are skipped). The reader
 * must open every {@code accept} file (and read its group names and metadata, where it has
 * them) and refuse every {@code reject} file with a {@link RibbonException}. Prints a line per
 * mismatch ({@code MISMATCH FILE RULE: ...}; {@code CRASH} for any other exception) and a
 * summary; exit status 0 if none, 1 if any, 2 if the corpus cannot be read.
 */
final class CheckCases {
    private CheckCases() {}

    static int run(String[] args, PrintStream out) {
        if (args.length != 1) {
            System.err.println("usage: java -jar ribbon.jar check-cases DIR (DIR/cases.tsv: FILE<TAB>accept|reject<TAB>RULE)");
            return 2;
        }
        Path dir;
        List<String> lines;
        try {
            dir = Path.of(args[0]);
            lines = Files.readAllLines(dir.resolve("cases.tsv"), StandardCharsets.UTF_8);
        } catch (IOException | InvalidPathException e) {
            System.err.println("ribbon: check-cases: cannot read " + args[0] + "/cases.tsv: " + e);
            return 2;
        }
        int cases = 0, accepted = 0, mismatches = 0;
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n);
            if (line.isBlank() || line.startsWith("#")) continue;
            String[] fields = line.split("\t", -1);
            if (fields.length != 3 || !(fields[1].equals("accept") || fields[1].equals("reject"))) {
                System.err.println("ribbon: check-cases: cases.tsv line " + (n + 1)
                        + ": expected FILE<TAB>accept|reject<TAB>RULE, got " + line);
                return 2;
            }
            cases++;
            boolean expectAccept = fields[1].equals("accept");
            String what = fields[0] + " " + fields[2] + ": ";
            String outcome = open(dir.resolve(fields[0]));
            if (outcome == null) accepted++;
            if (outcome != null && outcome.startsWith("CRASH")) {
                out.println("CRASH " + what + "expected " + fields[1] + ", " + outcome);
                mismatches++;
            } else if (expectAccept && outcome != null) {
                out.println("MISMATCH " + what + "expected accept, Java rejected it: " + outcome);
                mismatches++;
            } else if (!expectAccept && outcome == null) {
                out.println("MISMATCH " + what + "expected reject, Java accepted it");
                mismatches++;
            }
        }
        if (cases == 0) {
            System.err.println("ribbon: check-cases: " + dir.resolve("cases.tsv") + " lists no cases");
            return 2;
        }
        out.println(cases + " cases (" + accepted + " accepted by Java): "
                + (mismatches == 0 ? "every decision as expected" : mismatches + " mismatches"));
        return mismatches == 0 ? 0 : 1;
    }

    /** Null if the file opens (and its names and metadata read), else the reason it does not. */
    private static String open(Path path) {
        try {
            RibbonFilter f = RibbonFilter.open(path);
            if (f.hasGroupNames()) {
                if (f.hasByteGroups()) f.groupsBytes(); else f.groupsLong();
            }
            f.metadata();
            return null;
        } catch (RibbonException e) {
            return e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {  // a bug: the reader throws only RibbonException
            return "CRASH: " + e;
        }
    }
}
