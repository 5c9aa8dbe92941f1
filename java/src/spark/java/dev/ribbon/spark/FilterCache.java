package dev.ribbon.spark;

import dev.ribbon.RibbonException;
import dev.ribbon.RibbonFilter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The filters of one JVM (a Spark executor), each mapped once and shared by every task and
 * thread. Every {@link #get} compares the file's size, modification time and identity (device
 * and inode) with those of the mapped copy and maps the file again where one differs, so a
 * file replaced under the same path answers with its new contents. Replace files by renaming
 * a new one over the old: a file truncated in place while a task reads its mapping may still
 * fail that task.
 */
final class FilterCache {
    /** One slot per path: loading one file holds only that path's lock, not the map's. */
    private static final ConcurrentHashMap<String, Slot> SLOTS = new ConcurrentHashMap<>();

    private FilterCache() {}

    /** What identifies one version of a file. */
    static final class Stamp {
        final long size;
        final FileTime modified;
        final Object fileKey;

        private Stamp(BasicFileAttributes attributes) {
            this.size = attributes.size();
            this.modified = attributes.lastModifiedTime();
            this.fileKey = attributes.fileKey();
        }

        static Stamp of(String path) {
            try {
                return new Stamp(Files.readAttributes(Path.of(path), BasicFileAttributes.class));
            } catch (NoSuchFileException e) {
                throw new RibbonException("cannot open " + path + ": No such file or directory", e);
            } catch (IOException e) {
                throw new RibbonException("cannot open " + path + ": " + e.getMessage(), e);
            }
        }

        boolean sameAs(Stamp other) {
            return other != null && size == other.size && modified.equals(other.modified)
                    && Objects.equals(fileKey, other.fileKey);
        }
    }

    private static final class Slot {
        private Stamp stamp;
        private RibbonFilter filter;

        /** The filter of the file whose stamp is `now`, mapped and verified if it is new. */
        synchronized RibbonFilter get(String path, Stamp now) {
            // The stamp is taken before the file is opened: a file replaced in between is
            // mapped in its new version under the older stamp, and mapped again next time.
            if (!now.sameAs(stamp)) {
                filter = null;  // a file that no longer opens is not answered from its old copy
                filter = RibbonFilter.open(Path.of(path));
                stamp = now;
            }
            return filter;
        }
    }

    /** The filter at `path` as the file is now: mapped and verified on first use or change. */
    static RibbonFilter get(String path) {
        Stamp now = Stamp.of(path);
        return SLOTS.computeIfAbsent(path, key -> new Slot()).get(path, now);
    }
}
