package org.apache.spark.sql.connector.catalog.functions;

import org.apache.spark.sql.types.DataType;

public interface BoundFunction extends Function {
    DataType[] inputTypes();

    DataType resultType();

    default boolean isResultNullable() {
        throw org.apache.spark.sql.Stub.called();
    }

    default boolean isDeterministic() {
        throw org.apache.spark.sql.Stub.called();
    }

    default String canonicalName() {
        throw org.apache.spark.sql.Stub.called();
    }
}
