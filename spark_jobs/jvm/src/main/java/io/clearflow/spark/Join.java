package io.clearflow.spark;

import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** The entry point PySpark calls through py4j (spark_jobs.join.join_sides). */
public final class Join {
    private Join() {}

    /**
     * The temporal join of the union of both sides' rows (see {@link JoinProcessor} for the schema).
     *
     * @param keyHigh, keyLow two long columns: the 128-bit hash of the join key (of the Kafka coordinates for a
     *     dead letter), the state's key
     * @param columns the names of: side, join time, row id, arrival, matched, left struct, right struct, error
     * @param leftJoin emit a left event with an empty right side once its window passed unmatched
     * @param ttl an inner join's events expire by a TTL on their side's value instead of a timer per key
     */
    public static Dataset<Row> join(
            Dataset<Row> df,
            String keyHigh,
            String keyLow,
            List<String> columns,
            long windowSeconds,
            boolean leftJoin,
            boolean ttl) {
        StructType schema = df.schema();
        // Rows kept in state and rows out carry only some columns (the others NULL): every column nullable.
        StructField[] fields = schema.fields().clone();
        for (int i = 0; i < fields.length; i++) {
            StructField field = fields[i];
            fields[i] = new StructField(field.name(), field.dataType(), true, field.metadata());
        }
        StructType nullable = new StructType(fields);
        int[] indexes = columns.stream().mapToInt(schema::fieldIndex).toArray();
        JoinProcessor processor = new JoinProcessor(nullable, windowSeconds, leftJoin, ttl, indexes);
        return df.groupBy(new Column[] {functions.col(keyHigh), functions.col(keyLow)})
                .as(Encoders.tuple(Encoders.LONG(), Encoders.LONG()), Encoders.row(schema))
                .transformWithState(processor, TimeMode.ProcessingTime(), OutputMode.Append(), Encoders.row(nullable));
    }
}
