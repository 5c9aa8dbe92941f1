package org.apache.spark.sql.types;

public abstract class DataType {
    public boolean sameType(DataType other) {
        throw org.apache.spark.sql.Stub.called();
    }

    public String simpleString() {
        throw org.apache.spark.sql.Stub.called();
    }
}
