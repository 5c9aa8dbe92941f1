package dev.ribbon.spark;

import dev.ribbon.Hashing;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The map side of layer 0 of {@code ribbon.spark.build}, inside the executors' JVMs: each key
 * is hashed as {@code ribbon build} hashes it and appended to its shard range's hashes; a task
 * emits one row (the range's partition key, its hashes as one little-endian blob) per range
 * reached, every {@code batchKeys} keys and at its end. The rows are those the Python route
 * step emits (a range's hashes in another order, which the range tasks do not see: they
 * sort), but the keys never cross into a Python worker, a hand-over that costs about ten
 * times the hashing.
 *
 * <p>Keys are read from Spark's internal rows (the plan's {@code toRdd}): a typed {@code
 * Dataset<Long>} would box every key, and a string key is hashed where its bytes lie.
 */
public final class Routing {
    private Routing() {}

    /** The rows' schema, that of the Python route step. */
    static final StructType ROUTED = new StructType()
            .add("part", DataTypes.LongType, false)
            .add("hashes", DataTypes.BinaryType, false);
    /** Retrieval: each blob of hashes with a blob of their values (little-endian u32s). */
    static final StructType ROUTED_VALUES = ROUTED.add("values", DataTypes.BinaryType, false);

    /**
     * Rows {@code (part long, hashes binary)} routing the keys of {@code keys}' only column.
     *
     * @param integerKeys true for integer columns (64-bit keys, sign-extended), false for string
     *     (UTF-8 bytes) and binary columns
     * @param seed the filter's seed
     * @param numStarts layer 0's row starts; {@code shardBits} its shard size's log2
     * @param shardsPerRange whole shards per range
     * @param partKeys the partition key of each range as little-endian longs: the value that
     *     Spark's {@code repartition(numRanges, part)} puts in partition r, for range r
     * @param batchKeys keys a task gathers before it emits their blobs (below 2^28)
     */
    public static Dataset<Row> hashAndRoute(Dataset<Row> keys, boolean integerKeys, long seed,
            long numStarts, int shardBits, long shardsPerRange, byte[] partKeys, int batchKeys) {
        long seedMixed = Hashing.seedMix(seed);
        KeyHash hash = integerKeys ? new LongColumn(0, seedMixed) : ByteColumn.of(keys, 0, seed);
        return route(keys, new boolean[] {integerKeys}, hash, false, numStarts, shardBits,
                shardsPerRange, partKeys, batchKeys);
    }

    /**
     * Rows {@code (part long, hashes binary, values binary)} routing the keys of a retrieval
     * build ({@code ribbon.spark.build(..., values=...)}): {@code keyValues}' first column holds
     * the keys, its second the values (an integer column, each checked to be in [0, 2^32)
     * before), which ride beside their hashes as little-endian u32s; the other parameters as
     * {@link #hashAndRoute}'s.
     */
    public static Dataset<Row> hashAndRouteValues(Dataset<Row> keyValues, boolean integerKeys,
            long seed, long numStarts, int shardBits, long shardsPerRange, byte[] partKeys,
            int batchKeys) {
        long seedMixed = Hashing.seedMix(seed);
        KeyHash hash = integerKeys ? new LongColumn(0, seedMixed) : ByteColumn.of(keyValues, 0, seed);
        return route(keyValues, new boolean[] {integerKeys, true}, hash, true, numStarts, shardBits,
                shardsPerRange, partKeys, batchKeys);
    }

    /**
     * Rows {@code (part long, hashes binary)} routing the (group, key) pairs of a filter set's
     * build ({@code ribbon.spark.build_set}): {@code pairs}' two columns, hashed as {@code ribbon
     * build --groups -o} hashes them; the other parameters as {@link #hashAndRoute}'s.
     *
     * @param integerGroups true for an integer group column, false for string and binary
     * @param integerKeys the same for the key column
     */
    public static Dataset<Row> hashAndRoutePairs(Dataset<Row> pairs, boolean integerGroups,
            boolean integerKeys, long seed, long numStarts, int shardBits, long shardsPerRange,
            byte[] partKeys, int batchKeys) {
        long seedMixed = Hashing.seedMix(seed);
        KeyHash group = integerGroups
                ? new LongColumn(0, Hashing.groupSeedMix(seedMixed))
                : ByteColumn.of(pairs, 0, Hashing.groupSeed(seed));
        KeyHash key = integerKeys ? new LongColumn(1, seedMixed) : ByteColumn.of(pairs, 1, seed);
        return route(pairs, new boolean[] {integerGroups, integerKeys}, new PairHash(group, key),
                false, numStarts, shardBits, shardsPerRange, partKeys, batchKeys);
    }

    /**
     * The routed rows of {@code input}'s columns (integer ones read as longs), hashed by {@code
     * hash}; {@code withValues}: the last column holds values, routed beside the hashes.
     */
    private static Dataset<Row> route(Dataset<Row> input, boolean[] integerColumns, KeyHash hash,
            boolean withValues, long numStarts, int shardBits, long shardsPerRange, byte[] partKeys,
            int batchKeys) {
        if (batchKeys < 1 || batchKeys >= 1 << 28) {
            throw new IllegalArgumentException("batchKeys must be in [1, 2^28), not " + batchKeys);
        }
        long[] parts = new long[partKeys.length / Long.BYTES];
        ByteBuffer.wrap(partKeys).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(parts);
        var ranges = new RangeOf(numStarts, shardBits, shardsPerRange);
        Column[] columns = new Column[integerColumns.length];
        for (int i = 0; i < columns.length; ++i) {
            Column column = input.col(input.columns()[i]);
            columns[i] = integerColumns[i] ? column.cast("long") : column;
        }
        var selected = input.select(columns);
        JavaRDD<InternalRow> rows = ((org.apache.spark.sql.classic.Dataset<Row>) selected)
                .queryExecution().toRdd().toJavaRDD();
        int valueOrdinal = withValues ? columns.length - 1 : -1;
        JavaRDD<Row> routed = rows.mapPartitions(new Router(hash, ranges, parts, batchKeys, valueOrdinal));
        return input.sparkSession().createDataFrame(routed, withValues ? ROUTED_VALUES : ROUTED);
    }

    /** A row's hash, read from the columns of an internal row. */
    interface KeyHash extends java.io.Serializable {
        long of(InternalRow row);
    }

    /** An integer column (a long): {@link Hashing#hashLong} under a seed's mix. */
    record LongColumn(int ordinal, long seedMixed) implements KeyHash {
        @Override
        public long of(InternalRow row) {
            return Hashing.hashLong(row.getLong(ordinal), seedMixed);
        }
    }

    /** A string (hashed in place) or binary column: {@link Hashing#hashBytes} under a seed. */
    record ByteColumn(int ordinal, long seed, boolean binary) implements KeyHash {
        /** Column {@code ordinal} of {@code input}, a string or binary column. */
        static ByteColumn of(Dataset<Row> input, int ordinal, long seed) {
            return new ByteColumn(ordinal, seed,
                    input.schema().fields()[ordinal].dataType().sameType(DataTypes.BinaryType));
        }

        @Override
        public long of(InternalRow row) {
            // Binary values come out as arrays of their own; strings point into the row.
            if (binary) return Hashing.hashBytes(row.getBinary(ordinal), seed);
            UTF8String text = row.getUTF8String(ordinal);
            if (text.getBaseObject() instanceof byte[]) {
                int offset = Math.toIntExact(text.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
                return Hashing.hashBytes((byte[]) text.getBaseObject(), offset, text.numBytes(), seed);
            }
            return Hashing.hashBytes(text.getBytes(), seed);
        }
    }

    /** A filter set's pair: {@link Hashing#pairHash} of its group's and its key's hashes. */
    record PairHash(KeyHash group, KeyHash key) implements KeyHash {
        @Override
        public long of(InternalRow row) {
            return Hashing.pairHash(group.of(row), key.of(row));
        }
    }

    /** A layer-0 hash's shard range: its row start's shard, over the shards of a range. */
    static final class RangeOf implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        private final long numStarts;
        private final int shardBits;
        private final long shardsPerRange;

        RangeOf(long numStarts, int shardBits, long shardsPerRange) {
            this.numStarts = numStarts;
            this.shardBits = shardBits;
            this.shardsPerRange = shardsPerRange;
        }

        int of(long hash) {
            long start = Hashing.unsignedMultiplyHigh(hash, numStarts);  // fastrange64
            return (int) ((start >>> shardBits) / shardsPerRange);
        }
    }

    /**
     * Hashes a task's keys into per-range buffers and emits them as blob rows; with a value
     * column ({@code valueOrdinal} at least 0), each range's values in a blob beside.
     */
    static final class Router implements FlatMapFunction<Iterator<InternalRow>, Row> {
        private static final long serialVersionUID = 1L;
        private final KeyHash hash;
        private final RangeOf ranges;
        private final long[] parts;
        private final int batchKeys;
        private final int valueOrdinal;

        Router(KeyHash hash, RangeOf ranges, long[] parts, int batchKeys, int valueOrdinal) {
            this.hash = hash;
            this.ranges = ranges;
            this.parts = parts;
            this.batchKeys = batchKeys;
            this.valueOrdinal = valueOrdinal;
        }

        @Override
        public Iterator<Row> call(Iterator<InternalRow> rows) {
            return new Iterator<>() {
                private final long[][] hashes = new long[parts.length][];
                private final int[][] values = new int[parts.length][];
                private final int[] sizes = new int[parts.length];
                private final ArrayDeque<Row> ready = new ArrayDeque<>();

                @Override
                public boolean hasNext() {
                    if (ready.isEmpty()) gather();
                    return !ready.isEmpty();
                }

                @Override
                public Row next() {
                    if (!hasNext()) throw new NoSuchElementException();
                    return ready.poll();
                }

                /** Reads up to batchKeys keys, then queues their ranges' blobs. */
                private void gather() {
                    boolean withValues = valueOrdinal >= 0;
                    for (int n = 0; n < batchKeys && rows.hasNext(); ++n) {
                        InternalRow row = rows.next();
                        long h = hash.of(row);
                        int r = ranges.of(h);
                        if (hashes[r] == null || sizes[r] == hashes[r].length) {
                            int capacity = Math.max(256, 2 * sizes[r]);
                            hashes[r] = Arrays.copyOf(hashes[r] == null ? new long[0] : hashes[r], capacity);
                            if (withValues) {
                                values[r] = Arrays.copyOf(values[r] == null ? new int[0] : values[r], capacity);
                            }
                        }
                        if (withValues) values[r][sizes[r]] = (int) row.getLong(valueOrdinal);
                        hashes[r][sizes[r]++] = h;
                    }
                    for (int r = 0; r < sizes.length; ++r) {
                        if (sizes[r] == 0) continue;
                        byte[] blob = new byte[sizes[r] * Long.BYTES];
                        ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer()
                                .put(hashes[r], 0, sizes[r]);
                        if (withValues) {
                            byte[] valueBlob = new byte[sizes[r] * Integer.BYTES];
                            ByteBuffer.wrap(valueBlob).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer()
                                    .put(values[r], 0, sizes[r]);
                            ready.add(RowFactory.create(parts[r], blob, valueBlob));
                        } else {
                            ready.add(RowFactory.create(parts[r], blob));
                        }
                        sizes[r] = 0;
                    }
                }
            };
        }
    }
}
