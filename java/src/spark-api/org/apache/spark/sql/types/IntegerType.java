package org.apache.spark.sql.types;

public class IntegerType extends DataType {}
