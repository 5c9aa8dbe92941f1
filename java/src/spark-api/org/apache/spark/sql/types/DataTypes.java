package org.apache.spark.sql.types;

public class DataTypes {
    public static final DataType BinaryType = null;
    public static final DataType BooleanType = null;
    public static final DataType LongType = null;
}
