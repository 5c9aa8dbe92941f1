package dev.ribbon;

import java.nio.LongBuffer;

/**
 * Layer 0's solution words as a query reads them: a copy on the Java heap, whose reads the JIT
 * compiles to plain array loads (about 130 instructions a query fewer than through a mapped
 * buffer, whose every read checks its bounds and scope: bench/RESULTS.md), or, where the
 * heap cannot spare the copy, the mapped file itself.
 */
abstract class Words {
    abstract long get(int index);

    /** The heap copy's array (queries read it directly), or null where the words are mapped. */
    long[] array() {
        return null;
    }

    /**
     * The words of {@code mapped}: copied into the heap if they take at most
     * {@code heapBytes} bytes, else read in place.
     */
    static Words of(LongBuffer mapped, long heapBytes) {
        if ((long) mapped.remaining() * Long.BYTES > heapBytes) return new Mapped(mapped);
        long[] words = new long[mapped.remaining()];
        mapped.get(words);
        return new Heap(words);
    }

    /**
     * Bytes of layer 0 a filter copies into the heap: the system property
     * {@code dev.ribbon.heapCopyBytes} if set (0: never copy), else an eighth of the heap's
     * maximum size.
     */
    static long defaultHeapBytes() {
        Long set = Long.getLong("dev.ribbon.heapCopyBytes");
        return set != null ? set : Runtime.getRuntime().maxMemory() / 8;
    }

    private static final class Heap extends Words {
        private final long[] words;

        Heap(long[] words) {
            this.words = words;
        }

        @Override
        long get(int index) {
            return words[index];
        }

        @Override
        long[] array() {
            return words;
        }
    }

    private static final class Mapped extends Words {
        private final LongBuffer words;

        Mapped(LongBuffer words) {
            this.words = words;
        }

        @Override
        long get(int index) {
            return words.get(index);
        }
    }
}
