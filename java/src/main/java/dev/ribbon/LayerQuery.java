package dev.ribbon;

/**
 * A layer as a query asks it (docs/format.md, section 8): where a key's layer hash starts, does
 * the layer bump the key, and the key's row result there. {@link Layer} answers from the mapped
 * file for every width and setting; {@link Query64}'s layers from a plan made at open. Both
 * are walked by {@link #walk}, the one walk of every query.
 */
abstract class LayerQuery {
    /** The salt that derives this layer's hash from the previous layer's (layer 0: 0 or its own). */
    final long salt;

    LayerQuery(long salt) {
        this.salt = salt;
    }

    /** The start of a layer hash. */
    abstract long start(long hash);

    /** Is the key whose layer hash starts at `start` passed on to the next layer? */
    abstract boolean bumps(long start);

    /**
     * The row result of the key with layer hash `hash` starting at `start` (not bumped here), XOR
     * {@code fingerprint & rhsMask}: membership passes the mask of the key's right side (all
     * ones; 0 in homogeneous filters, whose right sides are 0), retrieval 0 (the result itself).
     */
    abstract int residue(long start, long hash, int rhsMask);

    /**
     * The walk of every query, scalar or batched, membership or retrieval: from layer 0, where
     * the key's hash is `hash` and its start `start`, to the first layer that does not bump it:
     * its {@link #residue} (a member: 0), or {@code absent} where every layer bumps the key.
     */
    static int walk(LayerQuery[] layers, long hash, long start, int rhsMask, int absent) {
        LayerQuery first = layers[0];
        if (!first.bumps(start)) return first.residue(start, hash, rhsMask);
        return walkOn(layers, 1, hash, rhsMask, absent);
    }

    /**
     * The rest of {@link #walk} for a key that the layers below `from` bump, whose hash in layer
     * from - 1 is `hash`: its residue in the first layer from `from` on that keeps it, else
     * {@code absent}. (Batched queries decide layer 0 for a block of keys first, then walk the
     * few bumped keys on from layer 1.)
     */
    static int walkOn(LayerQuery[] layers, int from, long hash, int rhsMask, int absent) {
        for (int l = from; l < layers.length; l++) {
            LayerQuery layer = layers[l];
            hash = Hashing.remix(hash, layer.salt);
            long start = layer.start(hash);
            if (!layer.bumps(start)) return layer.residue(start, hash, rhsMask);
        }
        return absent;
    }

    /** Layer 0's hash of a key hash ({@link #firstHash} of layer 0). */
    static long layer0Hash(LayerQuery[] layers, long keyHash) {
        return layers[0].firstHash(keyHash);
    }

    /**
     * This layer's hash of a key hash, as layer 0: the key hash, or its remix where the layer has
     * a salt (a standard layer retried). The one rule of the readers, as C++'s layer_remixes.
     */
    final long firstHash(long keyHash) {
        return salt != 0 ? Hashing.remix(keyHash, salt) : keyHash;
    }
}
