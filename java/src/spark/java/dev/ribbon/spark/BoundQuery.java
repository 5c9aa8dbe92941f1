package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF1;

/**
 * {@code ribbon_contains} or {@code ribbon_lookup} with the filter's path bound when the
 * function is made (ribbon.spark_jvm's column functions): Spark then converts only the key
 * per row, not also the path, as it must for the two-argument SQL functions.
 */
public final class BoundQuery implements UDF1<Object, Object> {
    private static final long serialVersionUID = 1L;

    private final String path;
    private final boolean lookup;
    /** Made per task: Spark deserializes the function for each task; null on the driver until used. */
    private transient TaskFilter filter;

    /** Membership ({@code lookup} false: a boolean) or retrieval (true: a long) in the file at {@code path}. */
    public BoundQuery(String path, boolean lookup) {
        this.path = path;
        this.lookup = lookup;
    }

    @Override
    public Object call(Object key) {
        if (filter == null) filter = new TaskFilter();
        return filter.answer(path, key, lookup);
    }
}
