package dev.ribbon;

/**
 * What each format version admits (docs/format.md, section 12, "Which version a writer writes"):
 * the one table the reader checks a file's version and features against, mirroring C++'s
 * {@code format::version_rules}. Versions 1 to 6 imply their features from the header (the
 * layout from the version, the encoding from threshold_encoding, check bits from check_bits, a
 * set from group_kind); version 7 states them in its features word, which must agree with those
 * fields. Either way the features must be ones the version may need, include those it must
 * need, and obey the rules of the features table (see {@link #combinationProblem}).
 */
final class VersionRules {
    // The feature bits of version 7's features word (section 12).
    static final int COMPACT = 1;
    static final int ONE_PLUS_BIT_CODES = 1 << 1;
    static final int CHECK_BITS = 1 << 2;
    static final int FILTER_SET = 1 << 3;
    static final int GROUP_NAMES = 1 << 4;
    static final int METADATA = 1 << 5;
    static final int NONE = 0;
    /** Every bit this reader knows; any other is refused by name. */
    static final int KNOWN = COMPACT | ONE_PLUS_BIT_CODES | CHECK_BITS | FILTER_SET | GROUP_NAMES | METADATA;

    static final String[] FEATURE_NAMES = {
        "compact", "one_plus_bit_codes", "check_bits", "filter_set", "group_names", "metadata"};

    enum Layout { STANDARD, COMPACT, EITHER }

    /** The "other rules" column. */
    enum Other {
        NONE,
        /** Version 1: variant 0, no fractional bits (extra_bit_fraction and upper_start_block 0); read only. */
        VARIANT_0_NO_FRACTION,
        /** Version 7: the features word at offset 12 states the features. */
        FEATURES_WORD
    }

    /** One row of the table. */
    static final class Row {
        final int version;
        final Layout layout;
        final int mayNeed;
        final int mustNeed;
        final Other other;

        Row(int version, Layout layout, int mayNeed, int mustNeed, Other other) {
            this.version = version;
            this.layout = layout;
            this.mayNeed = mayNeed;
            this.mustNeed = mustNeed;
            this.other = other;
        }

        /** Does the file state its features (version 7) rather than imply them? */
        boolean statesFeatures() {
            return other == Other.FEATURES_WORD;
        }

        /** Version 1: variant 0 only, and no fractional bits. */
        boolean bumpedWithoutFraction() {
            return other == Other.VARIANT_0_NO_FRACTION;
        }
    }

    private static Row row(int version, Layout layout, int mayNeed, int mustNeed, Other other) {
        return new Row(version, layout, mayNeed, mustNeed, other);
    }

    /** The table of docs/format.md, section 12, a row per version. */
    static final Row[] TABLE = {
        //  version  layout           features it may need                             features it must need  other rules
        row(1, Layout.STANDARD, NONE,                                           NONE,               Other.VARIANT_0_NO_FRACTION),
        row(2, Layout.STANDARD, NONE,                                           NONE,               Other.NONE),
        row(3, Layout.STANDARD, ONE_PLUS_BIT_CODES,                             ONE_PLUS_BIT_CODES, Other.NONE),
        row(4, Layout.STANDARD, ONE_PLUS_BIT_CODES | CHECK_BITS,                CHECK_BITS,         Other.NONE),
        row(5, Layout.COMPACT,  COMPACT | ONE_PLUS_BIT_CODES | CHECK_BITS,      COMPACT,            Other.NONE),
        row(6, Layout.STANDARD, ONE_PLUS_BIT_CODES | FILTER_SET,                FILTER_SET,         Other.NONE),
        row(7, Layout.EITHER,   KNOWN,                                          NONE,               Other.FEATURES_WORD),
    };

    static final int OLDEST_VERSION = TABLE[0].version;
    static final int CURRENT_VERSION = TABLE[TABLE.length - 1].version;

    private VersionRules() {}

    /** The row of a version, or null for a version this reader does not know. */
    static Row of(int version) {
        for (Row r : TABLE) {
            if (r.version == version) return r;
        }
        return null;
    }

    /** The name of feature bit {@code bit} ("bit N" for one this reader does not know). */
    static String featureName(int bit) {
        return bit < FEATURE_NAMES.length ? FEATURE_NAMES[bit] : "bit " + bit;
    }

    /** The names of the features of a word, "none" for 0 ("compact, filter_set"). */
    static String names(int features) {
        if (features == 0) return "none";
        StringBuilder s = new StringBuilder();
        for (int bit = 0; bit < 32; bit++) {
            if ((features & (1 << bit)) == 0) continue;
            if (s.length() > 0) s.append(", ");
            s.append(featureName(bit));
        }
        return s.toString();
    }

    /** A stated features word's first unknown bit: the error that names it, or null. */
    static String unknownBitProblem(int features) {
        int unknown = features & ~KNOWN;
        if (unknown == 0) return null;
        return "needs feature bit " + Integer.numberOfTrailingZeros(unknown)
                + ", which this reader does not know; upgrade ribbon";
    }

    /**
     * The features the fields of a header describe (versions 1 to 6 imply theirs so): the
     * layout, the encoding (2: 1+-bit codes), check bits and a set (non-zero group_kind).
     */
    static int implied(boolean compactLayout, int encoding, int checkBits, int groupKind) {
        return (compactLayout ? COMPACT : 0) | (encoding == 2 ? ONE_PLUS_BIT_CODES : 0)
                | (checkBits != 0 ? CHECK_BITS : 0) | (groupKind != 0 ? FILTER_SET : 0);
    }

    /**
     * The rules column of the features table that the bits alone decide: group_names needs
     * filter_set, check_bits not with filter_set. Null if none is broken.
     */
    static String combinationProblem(int features) {
        if ((features & GROUP_NAMES) != 0 && (features & FILTER_SET) == 0) {
            return "feature group_names needs filter_set (only a filter set has group names)";
        }
        if ((features & CHECK_BITS) != 0 && (features & FILTER_SET) != 0) {
            return "feature check_bits is not allowed with filter_set (a filter set is a filter)";
        }
        return null;
    }

    /** The rules column that the variant decides: check_bits needs a retrieval variant,
     *  filter_set a filter variant. Null if none is broken. */
    static String variantProblem(int features, Variant variant) {
        if ((features & CHECK_BITS) != 0 && !variant.retrieval) {
            return "feature check_bits needs a retrieval variant, not " + variant;
        }
        if ((features & FILTER_SET) != 0 && variant.retrieval) {
            return "feature filter_set needs a filter variant (0 to 2), not " + variant;
        }
        return null;
    }

    /**
     * Does the row admit these features: only ones its version may need, and all it must?
     * Null if so, else why not.
     */
    static String admitProblem(Row row, int features) {
        int extra = features & ~row.mayNeed;
        if (extra != 0) {
            return "format version " + row.version + " cannot have feature "
                    + featureName(Integer.numberOfTrailingZeros(extra))
                    + (row.statesFeatures() ? "" : " (the header implies " + names(features) + ")");
        }
        int missing = row.mustNeed & ~features;
        if (missing != 0) {
            return "format version " + row.version + " needs feature "
                    + featureName(Integer.numberOfTrailingZeros(missing))
                    + " (the header implies " + names(features) + ")";
        }
        return null;
    }

    /**
     * Version 7: the bits agree with the fields they describe (the layout is the compact bit
     * by construction). Null if they do, else which one disagrees.
     */
    static String agreementProblem(int stated, int fromFields) {
        int differ = (stated ^ fromFields) & (ONE_PLUS_BIT_CODES | CHECK_BITS | FILTER_SET);
        if (differ == 0) return null;
        int bit = Integer.numberOfTrailingZeros(differ);
        String field = bit == 1 ? "threshold_encoding" : bit == 2 ? "check_bits" : "group_kind";
        return "feature " + featureName(bit) + " is " + ((stated & (1 << bit)) != 0 ? "set" : "clear")
                + " but the header's " + field + " says " + ((fromFields & (1 << bit)) != 0 ? "it is there" : "it is not");
    }
}
