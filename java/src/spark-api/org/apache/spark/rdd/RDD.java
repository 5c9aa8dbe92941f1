package org.apache.spark.rdd;

import org.apache.spark.api.java.JavaRDD;

public abstract class RDD<T> {
    public JavaRDD<T> toJavaRDD() {
        throw org.apache.spark.sql.Stub.called();
    }
}
