package dev.ribbon.spark;

import dev.ribbon.RibbonException;
import dev.ribbon.RibbonFilter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The filters of one JVM (a Spark executor), each mapped once and shared by every task and
 * thread; a file rewritten since (another modification time or size) is mapped again.
 */
final class FilterCache {
    private static final ConcurrentHashMap<String, Entry> FILTERS = new ConcurrentHashMap<>();

    private FilterCache() {}

    private static final class Entry {
        final long modified;
        final long size;
        final RibbonFilter filter;

        Entry(long modified, long size, RibbonFilter filter) {
            this.modified = modified;
            this.size = size;
            this.filter = filter;
        }
    }

    /** The filter at `path`, mapped and verified on first use. */
    static RibbonFilter get(String path) {
        Path file = Path.of(path);
        long modified;
        long size;
        try {
            modified = Files.getLastModifiedTime(file).toMillis();
            size = Files.size(file);
        } catch (IOException e) {
            throw new RibbonException("cannot open " + path + ": " + e.getMessage(), e);
        }
        Entry entry = FILTERS.compute(path, (key, old) ->
                old != null && old.modified == modified && old.size == size
                        ? old : new Entry(modified, size, RibbonFilter.open(file)));
        return entry.filter;
    }
}
