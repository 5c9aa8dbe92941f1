package org.apache.spark.sql;

public interface Row extends java.io.Serializable {}
