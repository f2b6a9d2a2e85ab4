"""Fast path for parsing: Arrow's C++ JSON reader in the Kafka source, with Spark as the reference.

For a run of records, the source tries `pyarrow.json.read_json` with a strict typed schema. It accepts the
run only when every record is a JSON object and every field value has exactly the expected JSON type and
converts cleanly (ints are JSON integers, datetimes ISO 8601 strings with a zone, uuids valid...). Then it
emits the typed values with `_cf_fast = true`. Otherwise (invalid JSON, a number given as a string, a
tombstone, anything unusual) the run is split in halves down to `MIN_RUN` records, and what still fails is
emitted with `_cf_fast = false`: Spark parses those records with `from_json` (`transforms.parse_events`),
which remains the reference and produces the dead-letter reasons. Accepted values equal what the Spark path
would produce for the same record, so the fast path changes speed, not results.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

MIN_RUN = 256
_UUID_RE = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# Field types with a fast path; a spec with a `json` field (raw JSON text of a value) always uses Spark.
FAST_TYPES = {"string", "int", "float", "bool", "datetime", "uuid"}


def fast_column(index: int) -> str:
    return f"_cf_f{index}"


def supported(fields: Sequence[tuple[str, str]]) -> bool:
    return bool(fields) and all(t in FAST_TYPES for _, t in fields)


def output_arrow_types(fields: Sequence[tuple[str, str]]) -> list[Any]:
    import pyarrow as pa

    mapping = {
        "string": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "datetime": pa.timestamp("us", tz="UTC"),
        "uuid": pa.string(),
    }
    return [mapping[t] for _, t in fields]


def _read_schema(fields: Sequence[tuple[str, str]]) -> Any:
    """The strict schema Arrow parses with: nested structs by path; datetimes and uuids as strings."""
    import pyarrow as pa

    json_type = {
        "string": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "datetime": pa.string(),
        "uuid": pa.string(),
    }
    tree: dict = {}
    for path, field_type in fields:
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = json_type[field_type]

    def build(node: dict) -> list[Any]:
        return [pa.field(k, pa.struct(build(v)) if isinstance(v, dict) else v) for k, v in node.items()]

    return pa.schema(build(tree))


def _parse_run(values: list[bytes], fields: Sequence[tuple[str, str]], schema: Any) -> list[Any] | None:
    """Typed leaf arrays for a run of records, or None if any record needs Spark's parser."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    data = b"\n".join(values)
    if data.count(b"\n") != len(values) - 1:
        return None  # a record spans lines (pretty-printed JSON): let Spark parse it
    try:
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(values):
        return None  # e.g. an empty record
    arrays = []
    for path, field_type in fields:
        parts = path.split(".")
        column = table.column(parts[0]).combine_chunks()
        for part in parts[1:]:
            column = pc.struct_field(column, part)
        if field_type == "datetime":
            try:
                column = pc.cast(column, pa.timestamp("us", tz="UTC"))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        elif field_type == "uuid":
            valid = pc.match_substring_regex(column, _UUID_RE)
            if pc.any(pc.invert(pc.fill_null(valid, True))).as_py():
                return None
            column = pc.utf8_lower(column)
        arrays.append(column)
    return arrays


def parse_values(
    values: list[bytes | None], fields: Sequence[tuple[str, str]]
) -> list[tuple[int, int, list[Any] | None]]:
    """Split `values` into runs: (start, end, typed arrays) parsed here, or (start, end, None) for Spark."""
    schema = _read_schema(fields)
    runs: list[tuple[int, int, list[Any] | None]] = []

    def visit(start: int, end: int) -> None:
        chunk = values[start:end]
        arrays = None if None in chunk else _parse_run(chunk, fields, schema)  # type: ignore[arg-type]
        if arrays is not None or end - start <= MIN_RUN:
            runs.append((start, end, arrays))
            return
        middle = (start + end) // 2
        visit(start, middle)
        visit(middle, end)

    if values:
        visit(0, len(values))
    return runs


def fast_arrays(values: list[bytes | None], fields: Sequence[tuple[str, str]]) -> tuple[Any, list[Any]]:
    """(`_cf_fast` boolean array, one typed array per field) for a batch of record values."""
    import pyarrow as pa

    types = output_arrow_types(fields)
    flags: list[Any] = []
    pieces: list[list[Any]] = [[] for _ in fields]
    for start, end, arrays in parse_values(values, fields):
        n = end - start
        flags.append(pa.array([arrays is not None] * n, pa.bool_()))
        for i, arrow_type in enumerate(types):
            pieces[i].append(arrays[i].cast(arrow_type) if arrays is not None else pa.nulls(n, arrow_type))
    flag = pa.concat_arrays(flags) if flags else pa.array([], pa.bool_())
    return flag, [pa.concat_arrays(p) if p else pa.array([], t) for p, t in zip(pieces, types, strict=True)]
