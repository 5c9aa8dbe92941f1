package dev.ribbon.spark;

import dev.ribbon.RibbonException;
import dev.ribbon.RibbonFilter;
import java.util.Locale;
import java.util.OptionalInt;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The functions of {@link RibbonCatalog}: Spark binds them to the argument types when it
 * analyzes a query (wrong types, and with the path in the name a missing file, a file that is
 * not a ribbon file or a key type the file was not built for, fail there, naming the function,
 * the argument and the reason) and calls their {@code invoke} methods from generated code with
 * the column values as they lie in the row: integer keys as a primitive long (Spark casts int,
 * smallint and tinyint up), strings as UTF8String (hashed in place), binary as byte[].
 *
 * <p>The filter is looked up in {@link FilterCache} on a task's first row (Spark deserializes
 * a function object per task) and kept for the task: a file replaced by rename while a task
 * runs answers from its old mapping until the task ends, the next task maps the new file. On
 * the driver (no task: Spark evaluating a local relation) every call looks the file up.
 */
final class RibbonFunctions {
    private RibbonFunctions() {}

    /** The three functions and their arguments after the path. */
    enum Kind {
        CONTAINS("contains", "key"),
        LOOKUP("lookup", "key"),
        CONTAINS_IN("contains_in", "group", "key");

        final String sqlName;
        final String[] arguments;

        Kind(String sqlName, String... arguments) {
            this.sqlName = sqlName;
            this.arguments = arguments;
        }

        static Kind of(String name) {
            for (Kind k : values()) {
                if (k.sqlName.equals(name.toLowerCase(Locale.ROOT))) return k;
            }
            return null;
        }
    }

    /** Argument classes: integer (read as a long), string, binary. */
    static final int INTEGER = 0;
    static final int STRING = 1;
    static final int BINARY = 2;

    static int argumentClass(DataType type) {
        if (type instanceof LongType || type instanceof IntegerType || type instanceof ShortType
                || type instanceof ByteType) {
            return INTEGER;
        }
        if (type instanceof StringType) return STRING;
        if (type instanceof BinaryType) return BINARY;
        return -1;
    }

    /** Why `f` cannot answer `kind` for arguments of these classes (-1: no group), or null. */
    static String problem(RibbonFilter f, Kind kind, int group, int key, int groupArg, int keyArg) {
        String what = f.source();
        switch (kind) {
            case CONTAINS:
                if (f.isSet()) return what + " is a filter set: ask it with contains_in(group, key)";
                if (f.isRetrieval() && f.checkBits() == 0) {
                    return what + " is a retrieval structure without check bits: it answers lookup, not contains";
                }
                break;
            case LOOKUP:
                if (!f.isRetrieval()) return what + " is a filter, not a retrieval structure: use contains";
                break;
            default:
                if (!f.isSet()) return what + " is not a filter set: use contains";
                if (f.hasByteGroups() != (group != INTEGER)) {
                    return "argument " + groupArg + " (group) is " + className(group) + ", but " + what
                            + " names its groups by "
                            + (f.hasByteGroups() ? "byte strings (use a string or binary column)"
                            : "64-bit integers (use an integer column)");
                }
        }
        if (f.hasByteKeys() != (key != INTEGER)) {
            return "argument " + keyArg + " (key) is " + className(key) + ", but " + what + " was built from "
                    + (f.hasByteKeys() ? "byte-string keys (use a string or binary column)"
                    : "64-bit integer keys (use an integer column)");
        }
        return null;
    }

    private static String className(int argumentClass) {
        return argumentClass == INTEGER ? "an integer" : argumentClass == STRING ? "a string" : "binary";
    }

    /** {@code catalog.name} or {@code catalog.`path`.name}: what error messages call the function. */
    static String displayName(String catalog, Kind kind, String path) {
        return catalog + "." + (path == null ? "" : "`" + path.replace("`", "``") + "`.") + kind.sqlName;
    }

    /**
     * A function before Spark binds it to its argument types; {@code path} is the path in the
     * function's name, or null (the path is the first argument).
     */
    record Unbound(String catalog, Kind kind, String path) implements UnboundFunction {
        @Override
        public String name() {
            return displayName(catalog, kind, path);
        }

        @Override
        public String description() {
            String arguments = String.join(", ", kind.arguments);
            return name() + "(" + (path == null ? "path, " : "") + arguments + "): "
                    + (kind == Kind.CONTAINS ? "may the key be in the filter file?"
                    : kind == Kind.LOOKUP ? "the value the retrieval file stores for the key"
                    : "may the group hold the key, in the filter set file?");
        }

        private UnsupportedOperationException fail(String reason) {
            // Spark reports an UnsupportedOperationException from bind() as an AnalysisException.
            return new UnsupportedOperationException(name() + ": " + reason);
        }

        @Override
        public BoundFunction bind(StructType inputType) {
            StructField[] fields = inputType.fields();
            int first = path == null ? 1 : 0;
            String signature = name() + "(" + (path == null ? "path, " : "") + String.join(", ", kind.arguments) + ")";
            if (fields.length != first + kind.arguments.length) {
                throw fail("takes " + (first + kind.arguments.length) + " arguments, " + signature + ", not "
                        + fields.length);
            }
            DataType[] declared = new DataType[fields.length];
            if (path == null) {
                if (!(fields[0].dataType() instanceof StringType)) {
                    throw fail("argument 1 (path) is " + fields[0].dataType().simpleString()
                            + ": the filter's path is a string literal");
                }
                declared[0] = fields[0].dataType();
            }
            int[] classes = new int[kind.arguments.length];
            for (int i = 0; i < classes.length; i++) {
                DataType type = fields[first + i].dataType();
                classes[i] = argumentClass(type);
                if (classes[i] < 0) {
                    throw fail("argument " + (first + i + 1) + " (" + kind.arguments[i] + ") is " + type.simpleString()
                            + ": ribbon " + kind.arguments[i] + "s are integers (bigint, int, smallint, tinyint), "
                            + "strings or binary");
                }
                declared[first + i] = classes[i] == INTEGER ? DataTypes.LongType : type;
            }
            int group = kind == Kind.CONTAINS_IN ? classes[0] : -1;
            int key = classes[classes.length - 1];
            if (path != null) {
                RibbonFilter f;
                try {
                    f = FilterCache.get(path);
                } catch (RibbonException e) {
                    throw fail("the filter's path (in the name): " + e.getMessage());
                }
                String problem = problem(f, kind, group, key, first + 1, first + classes.length);
                if (problem != null) throw fail(problem);
            }
            String name = name();
            switch (kind) {
                case CONTAINS: return new Contains(name, kind, path, group, key, declared);
                case LOOKUP: return new Lookup(name, kind, path, group, key, declared);
                default: return new ContainsIn(name, kind, path, group, key, declared);
            }
        }
    }

    /** A bound function: its filter, bound once per task. */
    abstract static class Bound implements BoundFunction {
        private static final long serialVersionUID = 1L;
        final String name;
        final Kind kind;
        final String path;
        final int group;
        final int key;
        private final DataType[] inputTypes;
        /** The task's filter, and the path string (and object) it was bound for. */
        private transient RibbonFilter filter;
        private transient String boundPath;
        private transient UTF8String boundPathObject;

        Bound(String name, Kind kind, String path, int group, int key, DataType[] inputTypes) {
            this.name = name;
            this.kind = kind;
            this.path = path;
            this.group = group;
            this.key = key;
            this.inputTypes = inputTypes;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String canonicalName() {
            return "ribbon." + (path == null ? "" : "`" + path.replace("`", "``") + "`.") + kind.sqlName;
        }

        @Override
        public DataType[] inputTypes() {
            return inputTypes;  // Spark reads it only (and an array clone would be a Spark-typed array call)
        }

        @Override
        public boolean isDeterministic() {
            return true;
        }

        /** lookup: a long; contains, contains_in: a boolean. */
        @Override
        public DataType resultType() {
            return kind == Kind.LOOKUP ? DataTypes.LongType : DataTypes.BooleanType;
        }

        /**
         * Null for a null key, group or path, and lookup's failed check bits; but contains of an
         * integer key with the path in the name: Spark answers null for a null primitive key itself.
         */
        @Override
        public boolean isResultNullable() {
            return kind != Kind.CONTAINS || path == null || key != INTEGER;
        }

        /** The filter of the path in the name. */
        final RibbonFilter filter() {
            RibbonFilter f = filter;
            return f != null ? f : bind(path, null);
        }

        /**
         * The filter of a path argument: the task's, where the path is the object (a literal's)
         * or the string it was bound for.
         */
        final RibbonFilter filter(UTF8String pathArgument) {
            RibbonFilter f = filter;
            if (pathArgument == boundPathObject && f != null) return f;
            if (pathArgument == null) return null;
            String p = pathArgument.toString();
            if (f != null && p.equals(boundPath)) {
                boundPathObject = pathArgument;
                return f;
            }
            return bind(p, pathArgument);
        }

        private RibbonFilter bind(String p, UTF8String pathObject) {
            RibbonFilter f;
            int first = path == null ? 1 : 0;
            try {
                f = FilterCache.get(p);
            } catch (RibbonException e) {
                throw new RibbonException(name + ": " + (path == null ? "argument 1 (path): " : "the filter's path: ")
                        + e.getMessage(), e);
            }
            String problem = problem(f, kind, group, key, first + 1, first + kind.arguments.length);
            if (problem != null) throw new RibbonException(name + ": " + problem);
            if (TaskContext.get() != null) {  // kept for the task; the driver looks again each call
                filter = f;
                boundPath = p;
                boundPathObject = pathObject;
            }
            return f;
        }

        static boolean onHeap(UTF8String s) {
            return s.getBaseObject() instanceof byte[];
        }

        static int offset(UTF8String s) {
            return (int) (s.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
        }

        static boolean contains(RibbonFilter f, UTF8String key) {
            return onHeap(key) ? f.contains((byte[]) key.getBaseObject(), offset(key), key.numBytes())
                    : f.contains(key.getBytes());
        }

        static Long lookup(RibbonFilter f, long key) {
            return value(f.find(key));
        }

        static Long lookup(RibbonFilter f, UTF8String key) {
            return value(onHeap(key) ? f.find((byte[]) key.getBaseObject(), offset(key), key.numBytes())
                    : f.find(key.getBytes()));
        }

        static Long lookup(RibbonFilter f, byte[] key) {
            return value(f.find(key));
        }

        private static Long value(OptionalInt found) {
            return found.isPresent() ? Integer.toUnsignedLong(found.getAsInt()) : null;
        }
    }

    /** {@code contains}: a boolean; null for a null key or path. */
    public static final class Contains extends Bound implements ScalarFunction<Boolean> {
        private static final long serialVersionUID = 1L;

        Contains(String name, Kind kind, String path, int group, int key, DataType[] inputTypes) {
            super(name, kind, path, group, key, inputTypes);
        }

        public boolean invoke(long k) {
            return filter().contains(k);
        }

        public Boolean invoke(UTF8String k) {
            return k == null ? null : contains(filter(), k);
        }

        public Boolean invoke(byte[] k) {
            return k == null ? null : filter().contains(k);
        }

        public Boolean invoke(UTF8String p, long k) {
            RibbonFilter f = filter(p);
            return f == null ? null : f.contains(k);
        }

        public Boolean invoke(UTF8String p, UTF8String k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : contains(f, k);
        }

        public Boolean invoke(UTF8String p, byte[] k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : f.contains(k);
        }
    }

    /**
     * {@code lookup}: the stored value as a long; null for a null key or path and, in files with
     * check bits, for a key whose check bits fail.
     */
    public static final class Lookup extends Bound implements ScalarFunction<Long> {
        private static final long serialVersionUID = 1L;

        Lookup(String name, Kind kind, String path, int group, int key, DataType[] inputTypes) {
            super(name, kind, path, group, key, inputTypes);
        }

        public Long invoke(long k) {
            return lookup(filter(), k);
        }

        public Long invoke(UTF8String k) {
            return k == null ? null : lookup(filter(), k);
        }

        public Long invoke(byte[] k) {
            return k == null ? null : lookup(filter(), k);
        }

        public Long invoke(UTF8String p, long k) {
            RibbonFilter f = filter(p);
            return f == null ? null : lookup(f, k);
        }

        public Long invoke(UTF8String p, UTF8String k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : lookup(f, k);
        }

        public Long invoke(UTF8String p, byte[] k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : lookup(f, k);
        }
    }

    /**
     * {@code contains_in}: may the group hold the key? Null for a null group, key or path.
     * String groups and keys are copied out of the row (getBytes), integers and binary not.
     */
    public static final class ContainsIn extends Bound implements ScalarFunction<Boolean> {
        private static final long serialVersionUID = 1L;

        ContainsIn(String name, Kind kind, String path, int group, int key, DataType[] inputTypes) {
            super(name, kind, path, group, key, inputTypes);
        }

        private static byte[] b(UTF8String s) {
            return s.getBytes();
        }

        public boolean invoke(long g, long k) {
            return filter().containsIn(g, k);
        }

        public Boolean invoke(long g, UTF8String k) {
            return k == null ? null : filter().containsIn(g, b(k));
        }

        public Boolean invoke(long g, byte[] k) {
            return k == null ? null : filter().containsIn(g, k);
        }

        public Boolean invoke(UTF8String g, long k) {
            return g == null ? null : filter().containsIn(b(g), k);
        }

        public Boolean invoke(UTF8String g, UTF8String k) {
            return g == null || k == null ? null : filter().containsIn(b(g), b(k));
        }

        public Boolean invoke(UTF8String g, byte[] k) {
            return g == null || k == null ? null : filter().containsIn(b(g), k);
        }

        public Boolean invoke(byte[] g, long k) {
            return g == null ? null : filter().containsIn(g, k);
        }

        public Boolean invoke(byte[] g, UTF8String k) {
            return g == null || k == null ? null : filter().containsIn(g, b(k));
        }

        public Boolean invoke(byte[] g, byte[] k) {
            return g == null || k == null ? null : filter().containsIn(g, k);
        }

        public Boolean invoke(UTF8String p, long g, long k) {
            RibbonFilter f = filter(p);
            return f == null ? null : f.containsIn(g, k);
        }

        public Boolean invoke(UTF8String p, long g, UTF8String k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : f.containsIn(g, b(k));
        }

        public Boolean invoke(UTF8String p, long g, byte[] k) {
            RibbonFilter f = filter(p);
            return f == null || k == null ? null : f.containsIn(g, k);
        }

        public Boolean invoke(UTF8String p, UTF8String g, long k) {
            RibbonFilter f = filter(p);
            return f == null || g == null ? null : f.containsIn(b(g), k);
        }

        public Boolean invoke(UTF8String p, UTF8String g, UTF8String k) {
            RibbonFilter f = filter(p);
            return f == null || g == null || k == null ? null : f.containsIn(b(g), b(k));
        }

        public Boolean invoke(UTF8String p, UTF8String g, byte[] k) {
            RibbonFilter f = filter(p);
            return f == null || g == null || k == null ? null : f.containsIn(b(g), k);
        }

        public Boolean invoke(UTF8String p, byte[] g, long k) {
            RibbonFilter f = filter(p);
            return f == null || g == null ? null : f.containsIn(g, k);
        }

        public Boolean invoke(UTF8String p, byte[] g, UTF8String k) {
            RibbonFilter f = filter(p);
            return f == null || g == null || k == null ? null : f.containsIn(g, b(k));
        }

        public Boolean invoke(UTF8String p, byte[] g, byte[] k) {
            RibbonFilter f = filter(p);
            return f == null || g == null || k == null ? null : f.containsIn(g, k);
        }
    }
}
