package org.apache.spark.sql.connector.catalog;

public interface Identifier {
    static Identifier of(String[] namespace, String name) {
        throw org.apache.spark.sql.Stub.called();
    }

    String[] namespace();

    String name();
}
