package org.apache.spark.sql.connector.catalog.functions;

import org.apache.spark.sql.types.StructType;

public interface UnboundFunction extends Function {
    BoundFunction bind(StructType inputType);

    String description();
}
