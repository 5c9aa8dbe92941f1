package org.apache.spark.sql;

public class RowFactory {
    public static Row create(Object... values) {
        throw org.apache.spark.sql.Stub.called();
    }
}
