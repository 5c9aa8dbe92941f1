package org.apache.spark.sql.types;

public class BinaryType extends DataType {}
