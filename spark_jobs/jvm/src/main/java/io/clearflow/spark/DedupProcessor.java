package io.clearflow.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Keeps the first event of each key for one window: one TTL ValueState per key (the processing time it was
 * first seen), on the RocksDB state store.
 *
 * <p>Why TTL state: Spark expires TTL values by walking an index ordered by expiry time, so a micro-batch
 * pays for its own rows and the keys that expire now, never for the whole window (which is what the watermark
 * eviction of dropDuplicatesWithinWatermark does).
 *
 * <p>A new key costs one state read and one write; a duplicate one read; a dead letter (a non-null error
 * column) none: it is emitted as it is.
 *
 * <p>Within one batch a key's first event is the earliest by the order columns. The dedup time among them is
 * compared clamped into [batch time - window / 2, batch time] (a missing one as the batch time), so that a wrong
 * clock, far past or future, does not decide which copy wins. The clamp is here, not in the query: the batch's
 * time in a query is a literal that changes each batch, so every stage holding it was compiled again each batch.
 */
public final class DedupProcessor extends StatefulProcessor<Tuple2<Long, Long>, Row, Row> {
    private static final long serialVersionUID = 1L;
    static final String STATE_NAME = "first_seen";

    private final long windowSeconds;
    private final int errorIndex;
    private final int[] orderIndexes;
    private final int timeIndex;
    private transient ValueState<Long> firstSeen;

    DedupProcessor(long windowSeconds, int errorIndex, int[] orderIndexes, int timeIndex) {
        this.windowSeconds = windowSeconds;
        this.errorIndex = errorIndex;
        this.orderIndexes = orderIndexes.clone();
        this.timeIndex = timeIndex;
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
        TTLConfig ttl = new TTLConfig(Duration.ofSeconds(windowSeconds));
        firstSeen = getHandle().getValueState(STATE_NAME, Encoders.LONG(), ttl);
    }

    @Override
    public scala.collection.Iterator<Row> handleInputRows(
            Tuple2<Long, Long> key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
        // Nearly every group is one usable event: no list and no wrapper iterator for it (a row per group).
        List<Row> dead = null;
        Row first = null;
        long now = timerValues.getCurrentProcessingTimeInMs() * 1000L;
        long floor = now - Math.max(1L, windowSeconds / 2) * 1_000_000L;
        while (rows.hasNext()) {
            Row row = rows.next();
            if (!row.isNullAt(errorIndex)) {
                if (dead == null) {
                    dead = new ArrayList<>(1);
                }
                dead.add(row); // a dead letter: passes through, the state is not touched
            } else if (first == null || comesBefore(row, first, now, floor)) {
                first = row;
            }
        }
        boolean keep = first != null && !firstSeen.exists();
        if (keep) {
            firstSeen.update(timerValues.getCurrentProcessingTimeInMs());
        }
        if (dead == null) {
            return keep ? scala.collection.Iterator$.MODULE$.single(first) : scala.collection.Iterator$.MODULE$.empty();
        }
        if (keep) {
            dead.add(first);
        }
        return CollectionConverters.asScala(dead.iterator());
    }

    /** Earlier by the order columns (the clamped dedup time, Kafka partition, offset); a null sorts last. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private boolean comesBefore(Row a, Row b, long now, long floor) {
        for (int index : orderIndexes) {
            if (index == timeIndex) {
                int order = Long.compare(clampedTime(a, now, floor), clampedTime(b, now, floor));
                if (order != 0) {
                    return order < 0;
                }
                continue;
            }
            boolean aNull = a.isNullAt(index);
            boolean bNull = b.isNullAt(index);
            if (aNull || bNull) {
                if (aNull != bNull) {
                    return bNull;
                }
                continue;
            }
            int order = ((Comparable) a.get(index)).compareTo(b.get(index));
            if (order != 0) {
                return order < 0;
            }
        }
        return false;
    }

    private long clampedTime(Row row, long now, long floor) {
        if (row.isNullAt(timeIndex)) {
            return now;
        }
        return Math.min(now, Math.max(floor, ((Number) row.get(timeIndex)).longValue()));
    }
}
