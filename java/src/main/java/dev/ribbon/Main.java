package dev.ribbon;

import java.util.Arrays;

/**
 * {@code java -jar ribbon.jar query ...} (see {@link QueryCommand}), {@code verify FILE ...},
 * {@code check-cases DIR} (see {@link CheckCases}) and {@code bench ...} (see {@link Bench}).
 */
public final class Main {
    private Main() {}

    /** Runs a subcommand and exits with its status. */
    public static void main(String[] args) {
        String[] rest = args.length > 0 ? Arrays.copyOfRange(args, 1, args.length) : args;
        int status;
        if (args.length > 0 && args[0].equals("query")) {
            status = QueryCommand.run(rest, System.out, System.err);
        } else if (args.length > 0 && args[0].equals("verify")) {
            status = verify(rest);
        } else if (args.length > 0 && args[0].equals("check-cases")) {
            status = CheckCases.run(rest, System.out);
        } else if (args.length > 0 && args[0].equals("bench")) {
            status = Bench.run(rest);
        } else if (args.length == 1 && args[0].equals("--version")) {
            System.out.println(Version.text());
            status = 0;
        } else {
            System.err.println("usage: java -jar ribbon.jar query FILTER [-i FILE ...|-] [--format lines|u64|hex64]"
                    + " [--count] [--values] [--group G | --groups-of] [KEY ...]\n       java -jar ribbon.jar verify FILTER ...\n"
                    + "       java -jar ribbon.jar check-cases DIR\n       java -jar ribbon.jar bench FILTER KEYS.u64 [--rounds N]\n"
                    + "       java -jar ribbon.jar --version");
            status = 2;
        }
        System.exit(status);
    }

    /**
     * Opens every file (checksums and structure) and prints {@code OK: FILE} or {@code FAILED:
     * message} for each; exit 0 if all are valid, else 2. Anything but a RibbonException is a bug.
     */
    static int verify(String[] files) {
        int status = 0;
        for (String file : files) {
            try {
                RibbonFilter f = RibbonFilter.open(java.nio.file.Path.of(file));
                System.out.println("OK: " + file + ": checksums and structure valid (" + f.keyCount()
                        + " keys, " + f.numLayers() + " layers, " + f.sizeBytes() + " bytes)");
            } catch (RibbonException e) {
                System.out.println("FAILED: " + e.getMessage());
                status = Math.max(status, 2);
            } catch (RuntimeException e) {  // a bug: the reader must throw only RibbonException
                System.out.println("CRASH: " + file + ": " + e);
                status = 3;
            }
        }
        return status;
    }
}
