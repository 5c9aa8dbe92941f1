package dev.ribbon;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * Query benchmark (not a test): {@code bench FILTER KEYS.u64 [--rounds N]} queries every key of
 * a u64 key file (the members) and as many random integers (mostly non-members), one at a time
 * and in one batched call, and prints each round's throughput and the median.
 */
final class Bench {
    private Bench() {}

    private static final String USAGE = "usage: bench FILTER KEYS.u64 [--rounds N]";

    static int run(String[] args) {
        if (args.length != 2 && args.length != 4) {
            System.err.println(USAGE);
            return 2;
        }
        try {
            int rounds = args.length == 4 ? rounds(args[2], args[3]) : 5;
            RibbonFilter f = RibbonFilter.open(Path.of(args[0]));
            long[] members = readU64(Path.of(args[1]));
            long[] others = new SplittableRandom(42).longs(members.length).toArray();
            System.out.println("lanes: " + Lanes.CHOSEN.name()
                    + (Lanes.CHOSEN.name().equals("vector") ? "" : " (--add-modules jdk.incubator.vector: the vector code)"));
            report("scalar members", rounds, () -> scalar(f, members), members.length);
            report("scalar random", rounds, () -> scalar(f, others), others.length);
            report("batched members", rounds, () -> batched(f, members), members.length);
            report("batched random", rounds, () -> batched(f, others), others.length);
            return 0;
        } catch (RibbonException | IOException e) {
            System.err.println("ribbon: " + e.getMessage());
            return 2;
        }
    }

    /** The value of --rounds: a whole number from 1 to 1000. */
    static int rounds(String option, String value) {
        if (!option.equals("--rounds")) throw new RibbonException("unknown option " + option + "\n" + USAGE);
        int rounds;
        try {
            rounds = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            rounds = 0;
        }
        if (rounds < 1 || rounds > 1000) {
            throw new RibbonException("--rounds: '" + value + "' is not a whole number from 1 to 1000");
        }
        return rounds;
    }

    static long[] readU64(Path path) throws IOException {
        byte[] bytes = Files.readAllBytes(path);
        long[] keys = new long[bytes.length / 8];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(keys);
        return keys;
    }

    private static long scalar(RibbonFilter f, long[] keys) {
        long positives = 0;
        for (long key : keys) positives += f.contains(key) ? 1 : 0;
        return positives;
    }

    /** One batched call over all keys, as `ribbon bench` times its batched queries. */
    private static long batched(RibbonFilter f, long[] keys) {
        long positives = 0;
        for (boolean found : f.contains(keys)) positives += found ? 1 : 0;
        return positives;
    }

    /**
     * Wall-clock rates, and the thread's CPU time per query beside them: on a machine shared
     * with other work the CPU time is the steadier figure (it leaves out time spent waiting
     * for a core, not the caches the other work takes).
     */
    private static void report(String what, int rounds, LongSupplier query, long keys) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        double[] rates = new double[rounds];
        double[] cpuNanos = new double[rounds];
        long positives = 0;
        for (int r = 0; r < rounds; r++) {
            long cpu0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            positives = query.getAsLong();
            rates[r] = keys / ((System.nanoTime() - t0) / 1e9) / 1e6;
            cpuNanos[r] = (threads.getCurrentThreadCpuTime() - cpu0) / (double) keys;
            System.out.printf("%s round %d: %.2f M queries/s, %.1f CPU ns/query%n", what, r, rates[r], cpuNanos[r]);
        }
        Arrays.sort(rates);
        Arrays.sort(cpuNanos);
        System.out.printf("%s: median %.2f M queries/s (%.1f ns/query; %.1f CPU ns/query), %d of %d positive%n",
                what, rates[rounds / 2], 1e3 / rates[rounds / 2], cpuNanos[rounds / 2], positives, keys);
    }
}
