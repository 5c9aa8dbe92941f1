package org.apache.spark.sql.types;

public class ByteType extends DataType {}
