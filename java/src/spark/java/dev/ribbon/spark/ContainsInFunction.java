package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF3;

/**
 * {@code ribbon_contains_in(path, group, key)}: may the group hold the key, in the filter set
 * file at {@code path} ({@code ribbon.spark.build_set}, {@code ribbon build --groups -o})?
 * Null for a null group or key. The file is mapped once per executor JVM.
 */
public final class ContainsInFunction implements UDF3<String, Object, Object, Boolean> {
    private static final long serialVersionUID = 1L;

    /** Made per task: Spark deserializes the function for each task; null on the driver until used. */
    private transient TaskFilter filter;

    @Override
    public Boolean call(String filterPath, Object group, Object key) {
        if (filter == null) filter = new TaskFilter();
        return filter.answerIn(filterPath, group, key);
    }
}
