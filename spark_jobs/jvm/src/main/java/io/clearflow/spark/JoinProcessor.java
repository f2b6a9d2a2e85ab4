package io.clearflow.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The temporal join of two sides on one key: each side's events of the key wait in ONE ValueState per side (a
 * short list: most keys hold one or two events) on the RocksDB state store; a new event is joined with every
 * event of the other side whose join time is within the window of its own, in state or in the same batch.
 *
 * <p>Why a ValueState holding a list: a key costs one point lookup per side and one write per side and batch
 * that brings it events. The MapState this replaces was read with a prefix scan per key and side (a seek in every
 * RocksDB level and level-0 file, slower as the state grows); a TTL ListState keeps a count, a min-expiry entry
 * and a TTL index entry per key beside the list and cost more (docs/performance.md, "Temporal join").
 *
 * <p>An event stays for the window after its arrival (processing time). Expiry is either
 * <ul>
 *   <li>by timers (always for a left join; for an inner join unless {@code ttl}): one processing-time timer per
 *       key, at the time the oldest event the key keeps (either side) leaves the window. When it fires, the
 *       events past their window leave the state (a left join emits its unmatched left events with an empty
 *       right side then) and the timer is set again at the next oldest; or</li>
 *   <li>by TTL (inner join with {@code ttl}): each side's value expires a window after its last write; events
 *       older than their own window are skipped on read and pruned on the next write.</li>
 * </ul>
 * Which of the two is cheaper is measured, not assumed (docs/performance.md).
 *
 * <p>What a batch sees is what the MapState gave: an event of a TTL-like side (a right, a left of an inner
 * join) is gone once its window passed; a left join's left event stays visible until its timer handles it, so
 * a right in that same batch still matches it (the timer then removes it without emitting it unmatched).
 *
 * <p>Both state and timers run on processing time, which a replayed batch repeats (the batch timestamp is kept
 * in the offset log): a replay emits the same rows, and the sink's insert tokens drop them.
 *
 * <p>Rows in and out have one schema: a side (0 left, 1 right), the join time (microseconds), a row id, the
 * arrival time and a matched flag (both NULL on input), the two side structs, and the error column. A dead
 * letter (a non-null error) passes through untouched. An output row carries the left struct, the right struct
 * (NULL for a timed-out left event), and NULL elsewhere. A side's kept event is (join time, arrival, matched,
 * the side's struct).
 *
 * <p>State count (spark_jobs.metrics.StateKeyCount counts Spark's rows updated minus rows removed): one row per
 * key and side that holds events. Spark counts every write as an added row, so a write over a value that exists
 * removes it first; the count stays exact.
 */
public final class JoinProcessor extends StatefulProcessor<Tuple2<Long, Long>, Row, Row> {
    private static final long serialVersionUID = 1L;
    // The names of the MapStates of earlier versions: a checkpoint of theirs fails on the type change instead of
    // starting with their events silently left behind (spark_jobs.pipeline.check_checkpoint_state says it first).
    static final String LEFT_STATE = "left_events";
    static final String RIGHT_STATE = "right_events";
    private static final int E_TIME = 0;
    private static final int E_ARRIVAL = 1;
    private static final int E_MATCHED = 2;
    private static final int E_PAYLOAD = 3;

    private final StructType schema;
    private final StructType leftList;
    private final StructType rightList;
    private final long windowMicros;
    private final long windowMs;
    private final boolean leftJoin;
    private final boolean ttl;
    private final int sideIndex;
    private final int timeIndex;
    private final int leftIndex;
    private final int rightIndex;
    private final int errorIndex;
    private transient ValueState<Row> lefts;
    private transient ValueState<Row> rights;

    JoinProcessor(StructType schema, long windowSeconds, boolean leftJoin, boolean ttl, int[] indexes) {
        this.schema = schema;
        this.windowMicros = windowSeconds * 1_000_000L;
        this.windowMs = windowSeconds * 1_000L;
        this.leftJoin = leftJoin;
        this.ttl = ttl && !leftJoin; // a left join needs its timers to emit what timed out
        this.sideIndex = indexes[0];
        this.timeIndex = indexes[1];
        this.leftIndex = indexes[5];
        this.rightIndex = indexes[6];
        this.errorIndex = indexes[7];
        this.leftList = listSchema(schema.fields()[leftIndex].dataType());
        this.rightList = listSchema(schema.fields()[rightIndex].dataType());
    }

    /** A side's value: struct<events: array<struct<time, arrival, matched, payload>>>. */
    private static StructType listSchema(org.apache.spark.sql.types.DataType payload) {
        StructType event = new StructType()
                .add("time", DataTypes.LongType, false)
                .add("arrival", DataTypes.LongType, false)
                .add("matched", DataTypes.BooleanType, false)
                .add("payload", payload, true);
        return new StructType().add("events", DataTypes.createArrayType(event, false), false);
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
        TTLConfig config = ttl ? new TTLConfig(Duration.ofMillis(windowMs)) : TTLConfig.NONE();
        lefts = getHandle().getValueState(LEFT_STATE, Encoders.row(leftList), config);
        rights = getHandle().getValueState(RIGHT_STATE, Encoders.row(rightList), config);
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
        List<Row> storedLefts = read(lefts);
        List<Row> storedRights = read(rights);
        // Timers: a key that holds events has its timer at or before its oldest event's end; new events end later.
        boolean hadEvents = !storedLefts.isEmpty() || !storedRights.isEmpty();
        // The events a batch sees (see the class comment): a left join's lefts until their timer, others while in
        // their window. What is no longer seen is dropped when its side is written.
        List<Row> keptLefts = leftJoin ? new ArrayList<>(storedLefts) : live(storedLefts, now);
        List<Row> keptRights = live(storedRights, now);
        boolean leftsChanged = !newLefts.isEmpty();

        // New rights with the lefts in state (a match marks the stored left, for the left join's timer).
        if (!newRights.isEmpty()) {
            for (int i = 0; i < keptLefts.size(); i++) {
                Row left = keptLefts.get(i);
                boolean matched = false;
                for (Row right : newRights) {
                    if (within(left.getLong(E_TIME), right.getLong(timeIndex))) {
                        out.add(joined(left.get(E_PAYLOAD), right.get(rightIndex)));
                        matched = true;
                    }
                }
                if (matched && leftJoin && !left.getBoolean(E_MATCHED)) {
                    keptLefts.set(i, RowFactory.create(left.get(E_TIME), left.get(E_ARRIVAL), true, left.get(E_PAYLOAD)));
                    leftsChanged = true;
                }
            }
        }
        // New lefts with the rights in state and with the new rights.
        for (Row left : newLefts) {
            long time = left.getLong(timeIndex);
            boolean matched = false;
            for (Row right : keptRights) {
                if (within(time, right.getLong(E_TIME))) {
                    out.add(joined(left.get(leftIndex), right.get(E_PAYLOAD)));
                    matched = true;
                }
            }
            for (Row right : newRights) {
                if (within(time, right.getLong(timeIndex))) {
                    out.add(joined(left.get(leftIndex), right.get(rightIndex)));
                    matched = true;
                }
            }
            keptLefts.add(RowFactory.create(time, now, matched, left.get(leftIndex)));
        }
        for (Row right : newRights) {
            keptRights.add(RowFactory.create(right.getLong(timeIndex), now, false, right.get(rightIndex)));
        }
        if (leftsChanged) {
            write(lefts, !storedLefts.isEmpty(), keptLefts);
        }
        if (!newRights.isEmpty()) {
            write(rights, !storedRights.isEmpty(), keptRights);
        }
        if (!ttl && !hadEvents) {
            getHandle().registerTimer(now + windowMs);
        }
        return CollectionConverters.asScala(out.iterator());
    }

    /**
     * The key's timer: the events whose window has passed leave the state (a left join emits its unmatched left
     * events with an empty right side), and the timer is set again at the end of the oldest event kept.
     */
    @Override
    public scala.collection.Iterator<Row> handleExpiredTimer(
            Tuple2<Long, Long> key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
        long now = timerValues.getCurrentProcessingTimeInMs();
        List<Row> out = new ArrayList<>();
        List<Row> storedLefts = read(lefts);
        List<Row> storedRights = read(rights);
        List<Row> keptLefts = live(storedLefts, now);
        List<Row> keptRights = live(storedRights, now);
        if (leftJoin) {
            for (Row left : storedLefts) {
                if (!isLive(left, now) && !left.getBoolean(E_MATCHED)) {
                    out.add(joined(left.get(E_PAYLOAD), null));
                }
            }
        }
        if (keptLefts.size() != storedLefts.size()) {
            write(lefts, true, keptLefts);
        }
        if (keptRights.size() != storedRights.size()) {
            write(rights, true, keptRights);
        }
        long oldest = Long.MAX_VALUE;
        for (Row event : keptLefts) {
            oldest = Math.min(oldest, event.getLong(E_ARRIVAL));
        }
        for (Row event : keptRights) {
            oldest = Math.min(oldest, event.getLong(E_ARRIVAL));
        }
        if (oldest != Long.MAX_VALUE) {
            getHandle().registerTimer(oldest + windowMs);
        }
        return CollectionConverters.asScala(out.iterator());
    }

    /** A side's kept events (empty when none, or when its TTL value expired). */
    private static List<Row> read(ValueState<Row> state) {
        Row value = state.get();
        return value == null ? new ArrayList<>() : new ArrayList<>(value.<Row>getList(0));
    }

    /**
     * A side's events after a change: one write, over the value if there was one (removed first, so Spark's count
     * of rows added minus removed stays one row per key and side). A TTL value is always cleared first: it may
     * exist expired (a read says null) until the batch's TTL cleanup, and a write over it would be counted twice.
     */
    private void write(ValueState<Row> state, boolean existed, List<Row> events) {
        if (existed || ttl) {
            state.clear(); // a TTL value's clear() looks the value up and counts a removal only when there was one
        }
        if (!events.isEmpty()) {
            state.update(RowFactory.create(CollectionConverters.asScala(events).toSeq()));
        }
    }

    private boolean isLive(Row event, long now) {
        return event.getLong(E_ARRIVAL) + windowMs > now; // Spark's TTL: expired once now >= expiry
    }

    private List<Row> live(List<Row> events, long now) {
        List<Row> kept = new ArrayList<>(events.size());
        for (Row event : events) {
            if (isLive(event, now)) {
                kept.add(event);
            }
        }
        return kept;
    }

    private boolean within(long leftTime, long rightTime) {
        return Math.abs(leftTime - rightTime) <= windowMicros;
    }

    private Row joined(Object left, Object right) {
        Object[] values = new Object[schema.size()];
        values[leftIndex] = left;
        values[rightIndex] = right;
        return RowFactory.create(values);
    }
}
