package org.apache.spark.sql.catalyst.analysis;

public class NoSuchFunctionException extends Exception {
    private static final long serialVersionUID = 1L;

    public NoSuchFunctionException(org.apache.spark.sql.connector.catalog.Identifier ident) {
        throw org.apache.spark.sql.Stub.called();
    }
}
