package dev.ribbon.spark;

import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The ribbon SQL functions as a Spark function catalog (DataSource V2): with
 * {@code spark.sql.catalog.ribbon=dev.ribbon.spark.RibbonCatalog} (which
 * {@code ribbon.spark_jvm.register(spark)} sets on a running session),
 *
 * <ul>
 *   <li>{@code ribbon.contains(path, key)}, {@code ribbon.lookup(path, key)},
 *       {@code ribbon.contains_in(path, group, key)}: the path an argument (a string literal:
 *       the filter is bound on a task's first row and again only where the path changes);
 *   <li>{@code ribbon.`/path/to.ribbon`.contains(key)}, {@code ...lookup(key)},
 *       {@code ...contains_in(group, key)}: the path in the function's name, so the file is
 *       opened and checked against the argument types when the query is analyzed.
 * </ul>
 *
 * Spark calls them from generated code through their {@code invoke} methods with primitive
 * longs, UTF8String and byte[] arguments: no boxing, no conversion of the path per row.
 */
public final class RibbonCatalog implements FunctionCatalog {
    private String name = "ribbon";

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) {
        if (namespace.length > 1) return new Identifier[0];
        RibbonFunctions.Kind[] kinds = RibbonFunctions.Kind.values();
        Identifier[] out = new Identifier[kinds.length];
        for (int i = 0; i < kinds.length; i++) out[i] = Identifier.of(namespace, kinds[i].sqlName);
        return out;
    }

    @Override
    public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
        RibbonFunctions.Kind kind = RibbonFunctions.Kind.of(ident.name());
        String[] namespace = ident.namespace();
        if (kind == null || namespace.length > 1) throw new NoSuchFunctionException(ident);
        return new RibbonFunctions.Unbound(name, kind, namespace.length == 1 ? namespace[0] : null);
    }
}
