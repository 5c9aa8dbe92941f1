package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_contains_in} with the filter set's path bound when the function is made
 * (ribbon.spark_jvm's {@code contains_in_column}): Spark then converts only the group and the
 * key per row.
 */
public final class BoundContainsIn implements UDF2<Object, Object, Boolean> {
    private static final long serialVersionUID = 1L;

    private final String path;
    /** Made per task: Spark deserializes the function for each task; null on the driver until used. */
    private transient TaskFilter filter;

    /** Pairs asked of the filter set file at {@code path}. */
    public BoundContainsIn(String path) {
        this.path = path;
    }

    @Override
    public Boolean call(Object group, Object key) {
        if (filter == null) filter = new TaskFilter();
        return filter.answerIn(path, group, key);
    }
}
