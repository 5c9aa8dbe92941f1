package dev.ribbon.spark;

import dev.ribbon.RibbonFilter;
import org.apache.spark.TaskContext;

/**
 * The filter one UDF instance queries: looked up in {@link FilterCache} (which checks the
 * file's size, modification time and identity) on the first row of each task and for a new
 * path, so the per-row call does no system call. Outside a task (the driver evaluating a
 * local relation with the registered instance) every call checks.
 */
final class TaskFilter {
    /** What was looked up last, in one immutable object: threads sharing an instance see a whole one. */
    private record Current(String path, long taskAttempt, RibbonFilter filter) {}

    private Current current;

    RibbonFilter get(String filterPath) {
        TaskContext task = TaskContext.get();
        long attempt = task != null ? task.taskAttemptId() : -1;
        Current c = current;
        if (attempt < 0 || c == null || attempt != c.taskAttempt || !filterPath.equals(c.path)) {
            c = new Current(filterPath, attempt, FilterCache.get(filterPath));
            current = c;
        }
        return c.filter;
    }

    /**
     * The answer for {@code key} in the file at {@code filterPath}: a Boolean (membership) or,
     * with {@code lookup}, a Long (the stored value); null for a null key or path.
     */
    Object answer(String filterPath, Object key, boolean lookup) {
        if (key == null || filterPath == null) return null;
        RibbonFilter f = get(filterPath);
        return lookup ? (Object) Keys.lookup(f, key) : (Object) Keys.contains(f, key);
    }

    /**
     * May the group hold {@code key} in the filter set file at {@code filterPath}? Null for a
     * null group, key or path.
     */
    Boolean answerIn(String filterPath, Object group, Object key) {
        if (group == null || key == null || filterPath == null) return null;
        return Keys.containsIn(get(filterPath), group, key);
    }
}
