package dev.ribbon;

/**
 * The one exception type of the ribbon reader: a file that cannot be read, is not a ribbon
 * file, is corrupt, or is queried in a way it does not support. The message names the file and
 * the cause.
 */
public class RibbonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An error with a message naming the file and the cause. */
    public RibbonException(String message) {
        super(message);
    }

    /** An error caused by another exception (an I/O error). */
    public RibbonException(String message, Throwable cause) {
        super(message, cause);
    }
}
