package org.apache.spark.sql.connector.catalog;

public interface CatalogPlugin {
    void initialize(String name, org.apache.spark.sql.util.CaseInsensitiveStringMap options);

    String name();
}
