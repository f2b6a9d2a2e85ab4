package io.clearflow.protobuf;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import java.io.IOException;
import java.io.Serializable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Decodes Kafka record values in the Confluent Protobuf wire format into the text of the fields a pipeline reads.
 *
 * <p>The wire format: byte 0x00, the writer schema's id (4 bytes, big endian), the message indexes (a zigzag varint
 * count, then that many zigzag varints: the path of the message type within the .proto file; a single 0 byte stands
 * for the first message), then the message's bytes.
 *
 * <p>The UDF returns a struct: {@code schema_id} (NULL when the framing is wrong), {@code error} (why the record
 * cannot be read, NULL when it can) and one string per requested field path, {@code v0, v1, ...}. Each value is its
 * text, as a JSON event would carry it, so the engine converts it to the field's type exactly as it converts JSON
 * (spark_jobs.transforms.convert_text), with the same dead-letter reasons:
 *
 * <ul>
 *   <li>scalars: their text (proto3 fields without presence read their default when absent, as protobuf defines);
 *   <li>enums: the value's name; bytes: base64; google.protobuf.Timestamp: ISO-8601 UTC; wrapper types: their value;
 *   <li>a path through an absent message, or an absent field with presence: NULL;
 *   <li>repeated fields, maps and whole messages: JSON text.
 * </ul>
 *
 * <p>A schema id this decoder was not given yields a NULL error and NULL values: the engine decides (a schema the
 * registry lacks is a dead letter, a new one restarts the batch with it loaded).
 */
public final class ConfluentProtobufDecoder implements UDF1<byte[], Row>, Serializable {
  private static final long serialVersionUID = 1L;
  private static final int HEADER = 5;

  private final HashMap<Integer, String> schemas;
  private final String[] paths;
  private transient Map<Integer, FileDescriptor> files;

  public ConfluentProtobufDecoder(Map<Integer, String> schemas, List<String> paths) {
    this.schemas = new HashMap<>(schemas);
    this.paths = paths.toArray(new String[0]);
  }

  /**
   * Registers the decoder as the SQL function {@code name} on {@code spark} (called from Python through py4j).
   * {@code schemas}: .proto text by schema id; {@code paths}: the dotted field paths to read.
   *
   * <p>Marked nondeterministic only so that the optimizer never copies the call into each place that reads one of
   * its struct's fields (which would decode a record once per field): its result depends on its input alone.
   */
  public static void register(SparkSession spark, String name, Map<Integer, String> schemas, List<String> paths) {
    ConfluentProtobufDecoder decoder = new ConfluentProtobufDecoder(schemas, paths);
    spark.udf().register(name, functions.udf(decoder, decoder.resultType()).asNondeterministic());
  }

  /** Why {@code proto} cannot be used as a writer schema (it does not parse, or has no message), or null. */
  public static String problem(String proto) {
    try {
      FileDescriptor file = parse(proto);
      return file.getMessageTypes().isEmpty() ? "has no message type" : null;
    } catch (Exception | LinkageError e) {
      return "cannot be read as a .proto file: " + e.getMessage();
    }
  }

  /** The struct the UDF returns. */
  public StructType resultType() {
    List<StructField> fields = new ArrayList<>();
    fields.add(DataTypes.createStructField("schema_id", DataTypes.LongType, true));
    fields.add(DataTypes.createStructField("error", DataTypes.StringType, true));
    for (int i = 0; i < paths.length; i++) {
      fields.add(DataTypes.createStructField("v" + i, DataTypes.StringType, true));
    }
    return DataTypes.createStructType(fields);
  }

  static FileDescriptor parse(String proto) throws Exception {
    return ProtoDescriptors.parse(proto);
  }

  private FileDescriptor file(int schemaId) {
    if (files == null) {
      files = new HashMap<>();
    }
    return files.computeIfAbsent(
        schemaId,
        id -> {
          try {
            return parse(schemas.get(id));
          } catch (Exception e) {
            throw new IllegalStateException("schema id " + id + " " + problem(schemas.get(id)), e);
          }
        });
  }

  @Override
  public Row call(byte[] value) {
    Object[] out = new Object[2 + paths.length];
    if (value == null) {
      out[1] = "empty record value (NULL)";
      return RowFactory.create(out);
    }
    if (value.length < HEADER) {
      out[1] = "record too short for the Confluent wire format (" + value.length + " bytes)";
      return RowFactory.create(out);
    }
    if (value[0] != 0) {
      out[1] = String.format("not in the Confluent wire format: the first byte is 0x%02X, expected 0x00", value[0]);
      return RowFactory.create(out);
    }
    int schemaId =
        ((value[1] & 0xff) << 24) | ((value[2] & 0xff) << 16) | ((value[3] & 0xff) << 8) | (value[4] & 0xff);
    out[0] = (long) schemaId;
    if (!schemas.containsKey(schemaId)) {
      return RowFactory.create(out);
    }
    Message message;
    try {
      CodedInputStream input = CodedInputStream.newInstance(value, HEADER, value.length - HEADER);
      Descriptor type = messageType(file(schemaId), input, schemaId);
      message = DynamicMessage.parseFrom(type, input);
    } catch (BadRecord e) {
      out[1] = e.getMessage();
      return RowFactory.create(out);
    } catch (InvalidProtocolBufferException e) {
      out[1] = "cannot decode the record with Protobuf schema id " + schemaId + ": " + e.getMessage();
      return RowFactory.create(out);
    } catch (IOException e) {
      out[1] = "cannot read the message indexes of the record (schema id " + schemaId + "): " + e.getMessage();
      return RowFactory.create(out);
    }
    for (int i = 0; i < paths.length; i++) {
      out[2 + i] = text(message, paths[i]);
    }
    return RowFactory.create(out);
  }

  /** A record that cannot be read; its message is the dead letter's reason. */
  private static final class BadRecord extends Exception {
    private static final long serialVersionUID = 1L;

    BadRecord(String message) {
      super(message);
    }
  }

  private static Descriptor messageType(FileDescriptor file, CodedInputStream input, int schemaId)
      throws IOException, BadRecord {
    int count = input.readSInt32();
    if (count == 0) { // the common case, written as one 0 byte: the file's first message
      return first(file.getMessageTypes(), 0, schemaId);
    }
    if (count < 0 || count > 64) {
      throw new BadRecord("invalid message indexes in the record (count " + count + ", schema id " + schemaId + ")");
    }
    Descriptor type = first(file.getMessageTypes(), input.readSInt32(), schemaId);
    for (int i = 1; i < count; i++) {
      type = first(type.getNestedTypes(), input.readSInt32(), schemaId);
    }
    return type;
  }

  private static Descriptor first(List<Descriptor> types, int index, int schemaId) throws BadRecord {
    if (index < 0 || index >= types.size()) {
      throw new BadRecord("the record names message index " + index + ", which Protobuf schema id " + schemaId
          + " does not have");
    }
    return types.get(index);
  }

  /** The text of the value at a dotted path (null when a message on the way, or the field, is absent). */
  static String text(Message message, String path) {
    Message current = message;
    String[] parts = path.split("\\.");
    for (int i = 0; i < parts.length; i++) {
      FieldDescriptor field = current.getDescriptorForType().findFieldByName(parts[i]);
      if (field == null) {
        return null; // this version of the schema has no such field: NULL, like an absent JSON key
      }
      boolean last = i == parts.length - 1;
      if (field.isRepeated()) {
        return last ? json(current.getField(field), field) : null;
      }
      if (field.hasPresence() && !current.hasField(field)) {
        return null;
      }
      Object value = current.getField(field);
      if (last) {
        return scalarText(value, field);
      }
      if (field.getJavaType() != FieldDescriptor.JavaType.MESSAGE || isTimestamp(field)) {
        return null;
      }
      current = (Message) value;
    }
    return null;
  }

  private static boolean isTimestamp(FieldDescriptor field) {
    return field.getJavaType() == FieldDescriptor.JavaType.MESSAGE
        && "google.protobuf.Timestamp".equals(field.getMessageType().getFullName());
  }

  private static String scalarText(Object value, FieldDescriptor field) {
    switch (field.getJavaType()) {
      case ENUM:
        return ((EnumValueDescriptor) value).getName();
      case BYTE_STRING:
        return Base64.getEncoder().encodeToString(((ByteString) value).toByteArray());
      case MESSAGE:
        Message message = (Message) value;
        String type = field.getMessageType().getFullName();
        if ("google.protobuf.Timestamp".equals(type)) {
          return timestamp(message);
        }
        if (type.startsWith("google.protobuf.") && type.endsWith("Value") && !type.equals("google.protobuf.Value")) {
          FieldDescriptor inner = message.getDescriptorForType().findFieldByName("value");
          return inner == null ? json(message, field) : scalarText(message.getField(inner), inner);
        }
        return json(message, field);
      default:
        return String.valueOf(value);
    }
  }

  private static String timestamp(Message message) {
    Descriptor type = message.getDescriptorForType();
    long seconds = (Long) message.getField(type.findFieldByName("seconds"));
    int nanos = (Integer) message.getField(type.findFieldByName("nanos"));
    return Instant.ofEpochSecond(seconds, nanos).toString();
  }

  /** JSON text of a field's value: repeated fields as arrays, maps as objects, messages as objects. */
  static String json(Object value, FieldDescriptor field) {
    StringBuilder out = new StringBuilder();
    writeJson(out, value, field);
    return out.toString();
  }

  private static void writeJson(StringBuilder out, Object value, FieldDescriptor field) {
    if (field.isMapField()) {
      Descriptor entry = field.getMessageType();
      FieldDescriptor key = entry.findFieldByNumber(1);
      FieldDescriptor val = entry.findFieldByNumber(2);
      out.append('{');
      boolean firstEntry = true;
      for (Object item : (List<?>) value) {
        Message pair = (Message) item;
        if (!firstEntry) {
          out.append(',');
        }
        firstEntry = false;
        quote(out, String.valueOf(pair.getField(key)));
        out.append(':');
        writeSingle(out, pair.getField(val), val);
      }
      out.append('}');
    } else if (field.isRepeated()) {
      out.append('[');
      boolean firstItem = true;
      for (Object item : (List<?>) value) {
        if (!firstItem) {
          out.append(',');
        }
        firstItem = false;
        writeSingle(out, item, field);
      }
      out.append(']');
    } else {
      writeSingle(out, value, field);
    }
  }

  private static void writeSingle(StringBuilder out, Object value, FieldDescriptor field) {
    switch (field.getJavaType()) {
      case INT:
      case LONG:
      case FLOAT:
      case DOUBLE:
      case BOOLEAN:
        out.append(value);
        return;
      case MESSAGE:
        if (isTimestamp(field)) {
          quote(out, timestamp((Message) value));
          return;
        }
        Message message = (Message) value;
        out.append('{');
        boolean firstField = true;
        for (Map.Entry<FieldDescriptor, Object> entry : message.getAllFields().entrySet()) {
          if (!firstField) {
            out.append(',');
          }
          firstField = false;
          quote(out, entry.getKey().getName());
          out.append(':');
          writeJson(out, entry.getValue(), entry.getKey());
        }
        out.append('}');
        return;
      default:
        quote(out, scalarText(value, field));
    }
  }

  private static void quote(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }
}
