package org.apache.spark.sql.types;

public class ShortType extends DataType {}
