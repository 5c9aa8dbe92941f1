package dev.ribbon.spark;

import dev.ribbon.RibbonException;
import dev.ribbon.RibbonFilter;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;

/**
 * Spark values as ribbon keys, as ribbon.spark reads them: integer columns (long, int, short,
 * byte) as 64-bit integer keys (two's complement), string columns as their UTF-8 bytes and
 * binary columns as their bytes.
 */
final class Keys {
    private Keys() {}

    static boolean isInteger(Object key) {
        return key instanceof Long || key instanceof Integer || key instanceof Short || key instanceof Byte;
    }

    static byte[] bytes(Object key) {
        if (key instanceof byte[]) return (byte[]) key;
        if (key instanceof String) return ((String) key).getBytes(StandardCharsets.UTF_8);
        throw new RibbonException("ribbon keys and groups are integers (long, int) or byte strings (string, binary), not "
                + key.getClass().getSimpleName());
    }

    static boolean contains(RibbonFilter f, Object key) {
        return isInteger(key) ? f.contains(((Number) key).longValue()) : f.contains(bytes(key));
    }

    /** May the group hold the key? Groups are read as keys are. */
    static boolean containsIn(RibbonFilter f, Object group, Object key) {
        boolean integerKey = isInteger(key);
        if (isInteger(group)) {
            long g = ((Number) group).longValue();
            return integerKey ? f.containsIn(g, ((Number) key).longValue()) : f.containsIn(g, bytes(key));
        }
        byte[] g = bytes(group);
        return integerKey ? f.containsIn(g, ((Number) key).longValue()) : f.containsIn(g, bytes(key));
    }

    /** The key's value; null where the file's check bits tell the key is not in the set. */
    static Long lookup(RibbonFilter f, Object key) {
        OptionalInt value = isInteger(key) ? f.find(((Number) key).longValue()) : f.find(bytes(key));
        return value.isPresent() ? Integer.toUnsignedLong(value.getAsInt()) : null;
    }
}
