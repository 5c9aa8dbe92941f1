package dev.ribbon;

/**
 * The release this reader belongs to (CMakeLists.txt's project version, which configuring the
 * project checks this constant against) and the file format versions it reads. The jar's
 * manifest carries the release as its Implementation-Version too.
 */
public final class Version {
    private Version() {}

    /** "MAJOR.MINOR.PATCH", as {@code ribbon --version} prints it. */
    public static final String RELEASE = "0.1.0";

    /** The oldest file format version the reader accepts (its version table's first row). */
    public static final int OLDEST_READ_FORMAT = VersionRules.OLDEST_VERSION;

    /** The newest file format version the reader accepts (its version table's last row). */
    public static final int NEWEST_READ_FORMAT = VersionRules.CURRENT_VERSION;

    /** What {@code java -jar ribbon.jar --version} prints (this reader writes no files). */
    static String text() {
        return RELEASE + "\nformat versions: reads " + OLDEST_READ_FORMAT + "-" + NEWEST_READ_FORMAT
                + ", writes none (a reader)";
    }
}
