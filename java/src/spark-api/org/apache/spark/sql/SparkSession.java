package org.apache.spark.sql;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.types.StructType;

public abstract class SparkSession {
    public Dataset<Row> createDataFrame(JavaRDD<Row> rows, StructType schema) {
        throw org.apache.spark.sql.Stub.called();
    }
}
