package org.apache.spark.unsafe.types;

public final class UTF8String {
    public Object getBaseObject() {
        throw org.apache.spark.sql.Stub.called();
    }

    public long getBaseOffset() {
        throw org.apache.spark.sql.Stub.called();
    }

    public byte[] getBytes() {
        throw org.apache.spark.sql.Stub.called();
    }

    public int numBytes() {
        throw org.apache.spark.sql.Stub.called();
    }
}
