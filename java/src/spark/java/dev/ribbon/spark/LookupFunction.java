package dev.ribbon.spark;

import dev.ribbon.RibbonFilter;
import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_lookup(path, key)}: the value the retrieval file at {@code path} stores for the
 * key (an arbitrary value below 2^r for keys outside its set), as a long. Null for a null key.
 */
public final class LookupFunction implements UDF2<String, Object, Long> {
    private static final long serialVersionUID = 1L;

    private transient String path;
    private transient RibbonFilter filter;

    @Override
    public Long call(String filterPath, Object key) {
        if (key == null || filterPath == null) return null;
        if (!filterPath.equals(path)) {
            filter = FilterCache.get(filterPath);
            path = filterPath;
        }
        return Keys.lookup(filter, key);
    }
}
