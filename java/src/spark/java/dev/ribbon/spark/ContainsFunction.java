package dev.ribbon.spark;

import dev.ribbon.RibbonFilter;
import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_contains(path, key)}: may the key be in the filter file at {@code path}?
 * Null for a null key. The file is mapped once per executor JVM.
 */
public final class ContainsFunction implements UDF2<String, Object, Boolean> {
    private static final long serialVersionUID = 1L;

    /** The last file of this task's instance: the per-row call skips the cache's lookup. */
    private transient String path;
    private transient RibbonFilter filter;

    @Override
    public Boolean call(String filterPath, Object key) {
        if (key == null || filterPath == null) return null;
        if (!filterPath.equals(path)) {
            filter = FilterCache.get(filterPath);
            path = filterPath;
        }
        return Keys.contains(filter, key);
    }
}
