package io.clearflow.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The temporal join of two sides on one key: each side's events of the key wait in a MapState (row id -> the
 * event) on the RocksDB state store; a new event is joined with every event of the other side whose join time is
 * within the window of its own, in state or in the same batch.
 *
 * <p>Expiry, as cheap as dedup's: entries are TTL state (Spark removes them by walking an index ordered by expiry
 * time, so a batch pays for the entries expiring now, not for the window). A left join keeps its left events
 * without TTL instead: each has a processing-time timer at arrival + window, which emits it with an empty right
 * side when nothing matched it and removes it either way (a TTL could remove it before its timer, when no batch
 * ran in between, and the event would be lost). Timers are indexed by time too.
 *
 * <p>Both state and timers run on processing time, which a replayed batch repeats (the batch timestamp is kept
 * in the offset log): a replay emits the same rows, and the sink's insert tokens drop them.
 *
 * <p>Rows in and out have one schema: a side (0 left, 1 right), the join time (microseconds), a row id, the
 * arrival time and a matched flag (both NULL on input, set in state), the two side structs, and the error column.
 * A dead letter (a non-null error) passes through untouched. An output row carries the left struct, the right
 * struct (NULL for a timed-out left event), and NULL elsewhere.
 */
public final class JoinProcessor extends StatefulProcessor<Tuple2<Long, Long>, Row, Row> {
    private static final long serialVersionUID = 1L;
    static final String LEFT_STATE = "left_events";
    static final String RIGHT_STATE = "right_events";

    private final StructType schema;
    private final long windowMicros;
    private final long windowMs;
    private final boolean leftJoin;
    private final int sideIndex;
    private final int timeIndex;
    private final int rowIdIndex;
    private final int arrivalIndex;
    private final int matchedIndex;
    private final int leftIndex;
    private final int rightIndex;
    private final int errorIndex;
    private transient MapState<Long, Row> lefts;
    private transient MapState<Long, Row> rights;

    JoinProcessor(StructType schema, long windowSeconds, boolean leftJoin, int[] indexes) {
        this.schema = schema;
        this.windowMicros = windowSeconds * 1_000_000L;
        this.windowMs = windowSeconds * 1_000L;
        this.leftJoin = leftJoin;
        this.sideIndex = indexes[0];
        this.timeIndex = indexes[1];
        this.rowIdIndex = indexes[2];
        this.arrivalIndex = indexes[3];
        this.matchedIndex = indexes[4];
        this.leftIndex = indexes[5];
        this.rightIndex = indexes[6];
        this.errorIndex = indexes[7];
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
        TTLConfig ttl = new TTLConfig(Duration.ofSeconds(windowMs / 1000));
        lefts = getHandle().getMapState(LEFT_STATE, Encoders.LONG(), Encoders.row(schema), leftJoin ? TTLConfig.NONE() : ttl);
        rights = getHandle().getMapState(RIGHT_STATE, Encoders.LONG(), Encoders.row(schema), ttl);
    }

    @Override
    public scala.collection.Iterator<Row> handleInputRows(
            Tuple2<Long, Long> key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
        long now = timerValues.getCurrentProcessingTimeInMs();
        List<Row> out = new ArrayList<>();
        List<Row> newLefts = new ArrayList<>();
        List<Row> newRights = new ArrayList<>();
        while (rows.hasNext()) {
            Row row = rows.next();
            if (!row.isNullAt(errorIndex)) {
                out.add(row); // a dead letter: passes through, the state is not touched
            } else if (row.getInt(sideIndex) == 0) {
                newLefts.add(row);
            } else {
                newRights.add(row);
            }
        }
        if (newLefts.isEmpty() && newRights.isEmpty()) {
            return CollectionConverters.asScala(out.iterator());
        }
        boolean[] leftMatched = new boolean[newLefts.size()];
        // New rights with the lefts in state (a match marks the stored left, for the left join's timer).
        // The state is read by iterating it to its end, never with exists(): a MapState's exists() is a prefix
        // scan left open when it finds an entry, and its RocksDB iterator then stays open (pinning memtables and
        // blocks) until the task ends: one per key of the batch. In the 10k+10k bench that took the job's RSS to
        // 19 GB and made each batch slower as the state grew.
        if (!newRights.isEmpty()) {
            List<Tuple2<Long, Row>> stored = new ArrayList<>();
            lefts.iterator().foreach(entry -> stored.add(entry));
            for (Tuple2<Long, Row> entry : stored) {
                Row left = entry._2();
                boolean matched = false;
                for (Row right : newRights) {
                    if (within(left, right)) {
                        out.add(joined(left, right));
                        matched = true;
                    }
                }
                if (matched && leftJoin && !left.getBoolean(matchedIndex)) {
                    // Removed, then stored marked: Spark counts a put over an existing entry as an added state
                    // row, and the metrics' state count (spark_jobs.metrics.StateKeyCount: rows added minus rows
                    // removed) would keep the entry twice; the removal beside it keeps that count exact.
                    lefts.removeKey(entry._1());
                    lefts.updateValue(entry._1(), stored(left, left.getLong(arrivalIndex), true));
                }
            }
        }
        // New lefts with the rights in state and with the new rights.
        List<Row> storedRights = new ArrayList<>();
        if (!newLefts.isEmpty()) {
            rights.values().foreach(right -> storedRights.add(right));
        }
        for (int i = 0; i < newLefts.size(); i++) {
            Row left = newLefts.get(i);
            for (Row right : storedRights) {
                if (within(left, right)) {
                    out.add(joined(left, right));
                    leftMatched[i] = true;
                }
            }
            for (Row right : newRights) {
                if (within(left, right)) {
                    out.add(joined(left, right));
                    leftMatched[i] = true;
                }
            }
        }
        for (int i = 0; i < newLefts.size(); i++) {
            Row left = newLefts.get(i);
            lefts.updateValue(left.getLong(rowIdIndex), stored(left, now, leftMatched[i]));
            if (leftJoin) {
                getHandle().registerTimer(now + windowMs);
            }
        }
        for (Row right : newRights) {
            rights.updateValue(right.getLong(rowIdIndex), stored(right, now, false));
        }
        return CollectionConverters.asScala(out.iterator());
    }

    /** A left join's timer: left events whose window has passed leave the state; unmatched ones are emitted. */
    @Override
    public scala.collection.Iterator<Row> handleExpiredTimer(
            Tuple2<Long, Long> key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
        long due = expiredTimerInfo.getExpiryTimeInMs();
        List<Row> out = new ArrayList<>();
        List<Tuple2<Long, Row>> stored = new ArrayList<>(); // read to its end: see handleInputRows
        lefts.iterator().foreach(entry -> stored.add(entry));
        for (Tuple2<Long, Row> entry : stored) {
            Row left = entry._2();
            if (left.getLong(arrivalIndex) + windowMs > due) {
                continue; // its own timer comes later
            }
            if (!left.getBoolean(matchedIndex)) {
                out.add(joined(left, null));
            }
            lefts.removeKey(entry._1());
        }
        return CollectionConverters.asScala(out.iterator());
    }

    private boolean within(Row left, Row right) {
        return Math.abs(left.getLong(timeIndex) - right.getLong(timeIndex)) <= windowMicros;
    }

    private Row joined(Row left, Row right) {
        Object[] values = new Object[schema.size()];
        values[leftIndex] = left.get(leftIndex);
        values[rightIndex] = right == null ? null : right.get(rightIndex);
        return RowFactory.create(values);
    }

    /** The event as kept in state: its side's struct and join time, with its arrival and whether it matched. */
    private Row stored(Row row, long arrivalMs, boolean matched) {
        Object[] values = new Object[schema.size()];
        values[sideIndex] = row.get(sideIndex);
        values[timeIndex] = row.get(timeIndex);
        values[rowIdIndex] = row.get(rowIdIndex);
        values[arrivalIndex] = arrivalMs;
        values[matchedIndex] = matched;
        values[leftIndex] = row.get(leftIndex);
        values[rightIndex] = row.get(rightIndex);
        return RowFactory.create(values);
    }
}
