package org.apache.spark.sql.connector.catalog.functions;

public interface ScalarFunction<R> extends BoundFunction {
    default R produceResult(org.apache.spark.sql.catalyst.InternalRow input) {
        throw org.apache.spark.sql.Stub.called();
    }
}
