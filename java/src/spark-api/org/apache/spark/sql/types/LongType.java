package org.apache.spark.sql.types;

public class LongType extends DataType {}
