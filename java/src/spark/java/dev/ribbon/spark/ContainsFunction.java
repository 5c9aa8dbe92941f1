package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_contains(path, key)}: may the key be in the filter file at {@code path}?
 * Null for a null key. The file is mapped once per executor JVM.
 */
public final class ContainsFunction implements UDF2<String, Object, Boolean> {
    private static final long serialVersionUID = 1L;

    /** Made per task: Spark deserializes the function for each task; null on the driver until used. */
    private transient TaskFilter filter;

    @Override
    public Boolean call(String filterPath, Object key) {
        if (filter == null) filter = new TaskFilter();
        return (Boolean) filter.answer(filterPath, key, false);
    }
}
