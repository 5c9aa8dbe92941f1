package dev.ribbon;

/** What a file stores (the header's variant field). */
public enum Variant {
    /** BuRR-style bumped, layered filter. */
    BUMPED(0, false, true),
    /** Standard Ribbon: no bumping, slack, retried. */
    STANDARD(1, false, false),
    /** Homogeneous Ribbon: every right side 0. */
    HOMOGENEOUS(2, false, false),
    /** Static function (retrieval), bumped and layered. */
    RETRIEVAL(3, true, true),
    /** Static function, standard Ribbon. */
    STANDARD_RETRIEVAL(4, true, false);

    /** The header's code. */
    public final int code;
    /** Does the file answer lookups (values) rather than membership? */
    public final boolean retrieval;
    /** Does layer 0 bump keys by bucket thresholds? */
    public final boolean bumping;

    Variant(int code, boolean retrieval, boolean bumping) {
        this.code = code;
        this.retrieval = retrieval;
        this.bumping = bumping;
    }

    /** The variant's one spelling, as {@code ribbon info} prints it ("standard-retrieval"). */
    @Override
    public String toString() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** The variant of a header code, or null for an unknown one. */
    static Variant of(int code) {
        for (Variant v : values()) {
            if (v.code == code) return v;
        }
        return null;
    }
}
