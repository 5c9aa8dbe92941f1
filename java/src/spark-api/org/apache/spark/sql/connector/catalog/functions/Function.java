package org.apache.spark.sql.connector.catalog.functions;

public interface Function extends java.io.Serializable {
    String name();
}
