package org.apache.spark.sql.types;

public class StructType extends DataType {
    public StructType add(String name, DataType dataType, boolean nullable) {
        throw org.apache.spark.sql.Stub.called();
    }

    public StructField[] fields() {
        throw org.apache.spark.sql.Stub.called();
    }
}
