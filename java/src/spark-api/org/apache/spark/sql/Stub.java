package org.apache.spark.sql;

/** Thrown by every stub body: this API is for javac only, never on a class path at run time. */
public final class Stub {
    private Stub() {}

    public static UnsupportedOperationException called() {
        return new UnsupportedOperationException("a compile-only stub of Spark's API was called: "
                + "run with Spark's own jars");
    }
}
