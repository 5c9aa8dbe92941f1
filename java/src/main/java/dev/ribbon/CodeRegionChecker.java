package dev.ribbon;

import java.util.function.Function;

/**
 * Checks that every shard region of a layer's 1+-bit codes has the canonical form the writer
 * gives it (docs/format.md, section 6), so that queries can trust the lists: counts within
 * capacity first (what keeps the reads in bounds), then order, marks and zero unused bits.
 */
final class CodeRegionChecker {
    private final MappedFile file;
    private final Layer layer;
    private final CodeRegions regions;
    private final Function<String, RibbonException> fail;

    CodeRegionChecker(MappedFile file, Layer layer, Function<String, RibbonException> fail) {
        this.file = file;
        this.layer = layer;
        this.regions = layer.regions;
        this.fail = fail;
    }

    void check() {
        for (long shard = 0; shard < layer.numShards(); shard++) checkShard(shard);
    }

    private void checkShard(long shard) {
        CodeRegions.Region region = regions.region(file, layer.thresholdOffset, shard);
        long m = region.buckets;
        int indexBits = regions.indexBits;
        String where = "layer " + layerIndexHint() + "shard " + shard + ": ";
        long bitsOffset = region.offset + 8 * regions.headerWords;
        if (m % 64 != 0 && (file.getLong(bitsOffset + 8 * (CodeRegions.bitWords(m) - 1)) >>> (m % 64)) != 0) {
            throw fail.apply(where + "bucket bits past the last bucket");
        }
        long count = region.field(CodeRegions.COUNT);
        long allA = region.field(CodeRegions.ALL_A);
        long allB = region.field(CodeRegions.ALL_B);
        long heavyFrom = region.field(CodeRegions.HEAVY_FROM);
        long allFrom = region.field(CodeRegions.ALL_FROM);
        long capacity = CodeRegions.capacity(m, indexBits);
        if (count > capacity) throw fail.apply(where + "exception list longer than its capacity");
        // In this order: a slot is read as a bucket only once it is known to be one.
        boolean slotsInOrder = allB <= m && (allA < allB || (allA == m && allB == m));
        boolean slotsMarked = slotsInOrder && (allA == m || region.bit(allA)) && (allB == m || region.bit(allB));
        if (!slotsMarked || (allB < m && allB >= allFrom) || allFrom > m || (allFrom < m && allB == m)
                || heavyFrom > m || (heavyFrom < m && count != capacity)) {
            throw fail.apply(where + "bad exception list header");
        }
        for (long i = 0; i < count; i++) {
            long bucket = region.entry(i);
            if ((i > 0 && bucket <= region.entry(i - 1)) || bucket >= heavyFrom || bucket >= allFrom
                    || bucket == allA || bucket == allB || !region.bit(bucket)) {
                throw fail.apply(where + "bad exception list entry");
            }
        }
        long listBits = CodeRegions.listWords(m, indexBits) * 64;
        long headerBits = regions.headerWords * 64;
        if (!zeroFrom(region.entriesOffset(), count * indexBits, listBits)
                || !zeroFrom(region.offset, (long) CodeRegions.FIELDS * (indexBits + 1), headerBits)) {
            throw fail.apply(where + "non-zero unused bits in the exception list");
        }
    }

    /** Are the bits [bit, end) of the words at `words` zero? */
    private boolean zeroFrom(long words, long bit, long end) {
        for (; bit < end; bit += 63) {
            int n = (int) Math.min(end - bit, 63);
            if (CodeRegions.readBits(file, words, bit, n) != 0) return false;
        }
        return true;
    }

    private String layerIndexHint() {
        return layer.index + ": ";
    }
}
