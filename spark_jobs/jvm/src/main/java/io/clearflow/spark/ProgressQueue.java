package io.clearflow.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * The progress of one query, as JSON, for the Python driver to take in one py4j call (spark_jobs.metrics).
 *
 * <p>Why not a Python StreamingQueryListener: PySpark builds each progress event field by field through py4j, about
 * a hundred calls served by the JVM's listener thread, and that cost is per micro-batch, not per row. A light job
 * (100 events/s, a batch every 5 s) spent about a quarter of its CPU there (the listener thread and the Python
 * driver's callback thread; docs/performance.md). Here the JVM writes the progress's JSON once, and the driver
 * takes every progress waiting with a single call.
 */
public final class ProgressQueue extends StreamingQueryListener {
    private final String queryName;
    private final LinkedBlockingQueue<String> progress;

    /**
     * @param queryName only this query's progress is kept (one session may run several queries)
     * @param capacity progress kept while the driver does not take it; beyond that the oldest goes
     */
    public ProgressQueue(String queryName, int capacity) {
        this.queryName = queryName;
        this.progress = new LinkedBlockingQueue<>(capacity);
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        StreamingQueryProgress update = event.progress();
        if (!queryName.equals(update.name())) {
            return;
        }
        String json = update.json();
        while (!progress.offer(json)) {
            progress.poll(); // the driver fell behind: the newest progress counts more than the oldest
        }
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}

    /**
     * Every progress waiting, as a JSON array (oldest first): waits up to {@code timeoutMillis} for the first, and
     * returns "[]" when none came.
     */
    public String take(long timeoutMillis) throws InterruptedException {
        String first = progress.poll(timeoutMillis, TimeUnit.MILLISECONDS);
        if (first == null) {
            return "[]";
        }
        List<String> all = new ArrayList<>();
        all.add(first);
        progress.drainTo(all);
        return "[" + String.join(",", all) + "]";
    }
}
