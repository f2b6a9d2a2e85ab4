package io.clearflow.protobuf;

import com.google.protobuf.AnyProto;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DurationProto;
import com.google.protobuf.EmptyProto;
import com.google.protobuf.FieldMaskProto;
import com.google.protobuf.StructProto;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.WrappersProto;
import com.squareup.wire.schema.Field;
import com.squareup.wire.schema.Location;
import com.squareup.wire.schema.internal.parser.EnumConstantElement;
import com.squareup.wire.schema.internal.parser.EnumElement;
import com.squareup.wire.schema.internal.parser.FieldElement;
import com.squareup.wire.schema.internal.parser.MessageElement;
import com.squareup.wire.schema.internal.parser.OneOfElement;
import com.squareup.wire.schema.internal.parser.ProtoFileElement;
import com.squareup.wire.schema.internal.parser.ProtoParser;
import com.squareup.wire.schema.internal.parser.TypeElement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A .proto file's text (as a schema registry holds it) -> a protobuf-java FileDescriptor, for DynamicMessage.
 *
 * <p>Wire's parser reads the text; the descriptor is built here, against protobuf-java's compiled well-known types
 * (google/protobuf/timestamp.proto, wrappers.proto, ...). Not with a .proto loader that reads those files from the
 * classpath: Spark's own jars carry newer copies of them than wire's parser understands. Type names are left as
 * written: protobuf-java resolves them with protobuf's scoping rules when it builds the file.
 */
final class ProtoDescriptors {
  private static final Map<String, FileDescriptor> WELL_KNOWN =
      Map.of(
          "google/protobuf/timestamp.proto", TimestampProto.getDescriptor(),
          "google/protobuf/wrappers.proto", WrappersProto.getDescriptor(),
          "google/protobuf/duration.proto", DurationProto.getDescriptor(),
          "google/protobuf/struct.proto", StructProto.getDescriptor(),
          "google/protobuf/any.proto", AnyProto.getDescriptor(),
          "google/protobuf/empty.proto", EmptyProto.getDescriptor(),
          "google/protobuf/field_mask.proto", FieldMaskProto.getDescriptor());
  private static final Map<String, FieldDescriptorProto.Type> SCALARS =
      Map.ofEntries(
          Map.entry("double", FieldDescriptorProto.Type.TYPE_DOUBLE),
          Map.entry("float", FieldDescriptorProto.Type.TYPE_FLOAT),
          Map.entry("int32", FieldDescriptorProto.Type.TYPE_INT32),
          Map.entry("int64", FieldDescriptorProto.Type.TYPE_INT64),
          Map.entry("uint32", FieldDescriptorProto.Type.TYPE_UINT32),
          Map.entry("uint64", FieldDescriptorProto.Type.TYPE_UINT64),
          Map.entry("sint32", FieldDescriptorProto.Type.TYPE_SINT32),
          Map.entry("sint64", FieldDescriptorProto.Type.TYPE_SINT64),
          Map.entry("fixed32", FieldDescriptorProto.Type.TYPE_FIXED32),
          Map.entry("fixed64", FieldDescriptorProto.Type.TYPE_FIXED64),
          Map.entry("sfixed32", FieldDescriptorProto.Type.TYPE_SFIXED32),
          Map.entry("sfixed64", FieldDescriptorProto.Type.TYPE_SFIXED64),
          Map.entry("bool", FieldDescriptorProto.Type.TYPE_BOOL),
          Map.entry("string", FieldDescriptorProto.Type.TYPE_STRING),
          Map.entry("bytes", FieldDescriptorProto.Type.TYPE_BYTES));
  private static final Pattern MAP = Pattern.compile("map\\s*<\\s*([\\w.]+)\\s*,\\s*([\\w.]+)\\s*>");

  private ProtoDescriptors() {}

  static FileDescriptor parse(String proto) throws Exception {
    ProtoFileElement element = ProtoParser.Companion.parse(Location.get("schema.proto"), proto);
    boolean proto3 = String.valueOf(element.getSyntax()).contains("3");
    FileDescriptorProto.Builder file =
        FileDescriptorProto.newBuilder().setName("schema.proto").setSyntax(proto3 ? "proto3" : "proto2");
    if (element.getPackageName() != null) {
      file.setPackage(element.getPackageName());
    }
    List<FileDescriptor> dependencies = new ArrayList<>();
    for (String path : element.getImports()) {
      FileDescriptor known = WELL_KNOWN.get(path);
      if (known == null) {
        throw new IllegalArgumentException(
            "imports " + path + ": only the well-known google/protobuf types can be imported");
      }
      file.addDependency(path);
      dependencies.add(known);
    }
    for (TypeElement type : element.getTypes()) {
      if (type instanceof MessageElement) {
        file.addMessageType(message((MessageElement) type, proto3));
      } else if (type instanceof EnumElement) {
        file.addEnumType(enumType((EnumElement) type));
      }
    }
    return FileDescriptor.buildFrom(file.build(), dependencies.toArray(new FileDescriptor[0]));
  }

  private static DescriptorProto message(MessageElement element, boolean proto3) {
    DescriptorProto.Builder message = DescriptorProto.newBuilder().setName(element.getName());
    for (TypeElement nested : element.getNestedTypes()) {
      if (nested instanceof MessageElement) {
        message.addNestedType(message((MessageElement) nested, proto3));
      } else if (nested instanceof EnumElement) {
        message.addEnumType(enumType((EnumElement) nested));
      }
    }
    // Real oneofs first: the synthetic ones of proto3 `optional` fields must follow them.
    for (OneOfElement oneOf : element.getOneOfs()) {
      int index = message.getOneofDeclCount();
      message.addOneofDecl(OneofDescriptorProto.newBuilder().setName(oneOf.getName()));
      for (FieldElement field : oneOf.getFields()) {
        addField(message, field, index, proto3);
      }
    }
    for (FieldElement field : element.getFields()) {
      addField(message, field, null, proto3);
    }
    return message.build();
  }

  private static void addField(DescriptorProto.Builder message, FieldElement element, Integer oneOf, boolean proto3) {
    FieldDescriptorProto.Builder field =
        FieldDescriptorProto.newBuilder().setName(element.getName()).setNumber(element.getTag());
    Field.Label label = element.getLabel();
    field.setLabel(
        label == Field.Label.REPEATED
            ? FieldDescriptorProto.Label.LABEL_REPEATED
            : label == Field.Label.REQUIRED
                ? FieldDescriptorProto.Label.LABEL_REQUIRED
                : FieldDescriptorProto.Label.LABEL_OPTIONAL);
    Matcher map = MAP.matcher(element.getType());
    if (map.matches()) { // map<K, V> is a repeated nested entry message, as protoc writes it
      String entryName = camel(element.getName()) + "Entry";
      DescriptorProto.Builder entry =
          DescriptorProto.newBuilder()
              .setName(entryName)
              .setOptions(MessageOptions.newBuilder().setMapEntry(true));
      FieldDescriptorProto.Label single = FieldDescriptorProto.Label.LABEL_OPTIONAL;
      entry.addField(typed(FieldDescriptorProto.newBuilder().setName("key").setNumber(1).setLabel(single), map.group(1)));
      entry.addField(
          typed(FieldDescriptorProto.newBuilder().setName("value").setNumber(2).setLabel(single), map.group(2)));
      message.addNestedType(entry);
      field.setLabel(FieldDescriptorProto.Label.LABEL_REPEATED).setTypeName(entryName);
      field.setType(FieldDescriptorProto.Type.TYPE_MESSAGE);
    } else {
      typed(field, element.getType());
    }
    if (oneOf != null) {
      field.setOneofIndex(oneOf);
    } else if (proto3 && label == Field.Label.OPTIONAL) { // proto3 `optional`: presence, in a synthetic oneof
      field.setProto3Optional(true).setOneofIndex(message.getOneofDeclCount());
      message.addOneofDecl(OneofDescriptorProto.newBuilder().setName("_" + element.getName()));
    }
    message.addField(field);
  }

  private static FieldDescriptorProto.Builder typed(FieldDescriptorProto.Builder field, String type) {
    FieldDescriptorProto.Type scalar = SCALARS.get(type);
    if (type.startsWith("google.protobuf.")) {
      type = "." + type;
    }
    return scalar != null ? field.setType(scalar) : field.setTypeName(type);
  }

  private static String camel(String name) {
    StringBuilder out = new StringBuilder();
    boolean upper = true;
    for (char c : name.toCharArray()) {
      if (c == '_') {
        upper = true;
      } else {
        out.append(upper ? Character.toUpperCase(c) : c);
        upper = false;
      }
    }
    return out.toString();
  }

  private static EnumDescriptorProto enumType(EnumElement element) {
    EnumDescriptorProto.Builder type = EnumDescriptorProto.newBuilder().setName(element.getName());
    for (EnumConstantElement constant : element.getConstants()) {
      type.addValue(EnumValueDescriptorProto.newBuilder().setName(constant.getName()).setNumber(constant.getTag()));
    }
    return type.build();
  }
}
