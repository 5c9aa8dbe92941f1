package org.apache.spark.sql.catalyst;

import org.apache.spark.unsafe.types.UTF8String;

public abstract class InternalRow {
    public abstract long getLong(int ordinal);

    public abstract byte[] getBinary(int ordinal);

    public abstract UTF8String getUTF8String(int ordinal);
}
