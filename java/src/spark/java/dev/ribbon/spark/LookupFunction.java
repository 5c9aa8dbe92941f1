package dev.ribbon.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code ribbon_lookup(path, key)}: the value the retrieval file at {@code path} stores for the
 * key (an arbitrary value below 2^r for keys outside its set), as a long. Null for a null key,
 * and, in files with check bits, for a key whose check bits do not match (not in the set).
 */
public final class LookupFunction extends FileKeyFunction<Long>
        implements UDF2<String, Object, Long> {  // Spark reads the interfaces a class names itself
    private static final long serialVersionUID = 1L;

    public LookupFunction() {
        super(true);
    }
}
