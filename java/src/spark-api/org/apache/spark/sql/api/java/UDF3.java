package org.apache.spark.sql.api.java;

public interface UDF3<T1, T2, T3, R> extends java.io.Serializable {
    R call(T1 t1, T2 t2, T3 t3) throws Exception;
}
