package org.apache.spark.sql.classic;

import org.apache.spark.sql.execution.QueryExecution;

public class Dataset<T> extends org.apache.spark.sql.Dataset<T> {
    public QueryExecution queryExecution() {
        throw org.apache.spark.sql.Stub.called();
    }
}
