package io.clearflow.spark;

import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.StructType;

/** The entry point PySpark calls through py4j (spark_jobs.dedup.drop_duplicates). */
public final class Dedup {
    private Dedup() {}

    /**
     * Rows of {@code df} without the duplicates of a key seen within {@code windowSeconds} (processing time).
     *
     * @param keyHigh, keyLow two long columns: the 128-bit hash of the dedup key (of the Kafka coordinates for a
     *     dead letter), the state's key
     * @param errorColumn non-null for a dead letter, which passes through without touching the state
     * @param orderColumns within one batch, the first row of a key by these columns is kept
     * @param timeColumn the one of {@code orderColumns} that holds the dedup time (microseconds), which is
     *     compared clamped into the last half window before the batch's time (see {@link DedupProcessor})
     * @return the kept rows, with the schema of {@code df}
     */
    public static Dataset<Row> dropDuplicates(
            Dataset<Row> df,
            String keyHigh,
            String keyLow,
            String errorColumn,
            long windowSeconds,
            List<String> orderColumns,
            String timeColumn) {
        StructType schema = df.schema();
        int[] order = orderColumns.stream().mapToInt(schema::fieldIndex).toArray();
        DedupProcessor processor = new DedupProcessor(
                windowSeconds, schema.fieldIndex(errorColumn), order, schema.fieldIndex(timeColumn));
        return df.groupBy(new Column[] {functions.col(keyHigh), functions.col(keyLow)})
                .as(Encoders.tuple(Encoders.LONG(), Encoders.LONG()), Encoders.row(schema))
                .transformWithState(processor, TimeMode.ProcessingTime(), OutputMode.Append(), Encoders.row(schema));
    }
}
