package org.apache.spark.sql.types;

public class StringType extends DataType {}
