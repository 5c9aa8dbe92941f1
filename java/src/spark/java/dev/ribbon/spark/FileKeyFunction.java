package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * A UDF of {@code (path, key)} answered by the filter file at {@code path}: the file is looked up
 * once per task ({@link TaskFilter}) and mapped once per executor JVM ({@link FilterCache}).
 *
 * @param <R> the answer's type: Boolean for membership, Long for a stored value
 */
abstract class FileKeyFunction<R> implements UDF2<String, Object, R> {
    private static final long serialVersionUID = 1L;

    /** Whether the answer is the stored value (retrieval files) rather than membership. */
    private final boolean lookup;

    /** Made per task: Spark deserializes the function for each task; null on the driver until used. */
    private transient TaskFilter filter;

    FileKeyFunction(boolean lookup) {
        this.lookup = lookup;
    }

    @Override
    @SuppressWarnings("unchecked")
    public final R call(String filterPath, Object key) {
        if (filter == null) filter = new TaskFilter();
        return (R) filter.answer(filterPath, key, lookup);
    }
}
