package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_contains(path, key)}: may the key be in the filter file at {@code path}?
 * Null for a null key. The file is mapped once per executor JVM.
 */
public final class ContainsFunction extends FileKeyFunction<Boolean>
        implements UDF2<String, Object, Boolean> {  // Spark reads the interfaces a class names itself
    private static final long serialVersionUID = 1L;

    public ContainsFunction() {
        super(false);
    }
}
