package org.apache.spark.sql.connector.catalog;

import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;

public interface FunctionCatalog extends CatalogPlugin {
    Identifier[] listFunctions(String[] namespace);

    UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException;
}
