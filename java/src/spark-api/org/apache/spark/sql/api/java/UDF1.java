package org.apache.spark.sql.api.java;

public interface UDF1<T1, R> extends java.io.Serializable {
    R call(T1 t1) throws Exception;
}
