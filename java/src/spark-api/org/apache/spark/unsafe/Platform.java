package org.apache.spark.unsafe;

public final class Platform {
    private Platform() {}

    /** Not a constant expression (as in Spark, where it is read from Unsafe): javac must not inline it. */
    public static final int BYTE_ARRAY_OFFSET = Integer.parseInt("0");
}
