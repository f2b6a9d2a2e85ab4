"""Will the sampled events reach the table? Per mapped field, per dedup key and for the event time, counted
with the engine's own conversion rules (`clearflow_spec.conversion`), so the wizard and the job cannot disagree.

- A mapped field "fits" when every sampled value converts to its column's type, "fits N of M sampled
  values" (`partial`, a warning) when some do, "cannot fit" when none does: every event carrying a value
  would be a dead letter. "Cannot fit" blocks unless the user accepts dead letters for that field.
- A dedup key (or the event-time field) that is missing, null or does not convert in some events sends those
  events to dead letters: a warning with the share; in every sampled event: blocking.
Used by the wizard (mapping and dedup steps, on the draft's stored sample) and by `POST /pipelines/validate/`
(`check_live`: a live sample from Kafka). Pure functions except `sample_check_live`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from clearflow_spec import conversion
from clearflow_spec.spec import PipelineSpec, SpecError, SpecIssue

FITS, PARTIAL, CANNOT_FIT, NO_VALUES, NOT_CHECKED = "fits", "partial", "cannot_fit", "no_values", "not_checked"
MAX_EXAMPLES = 3
LIVE_SAMPLE_SIZE = 100


@dataclass(frozen=True)
class FailedValue:
    value: str  # the sampled value as JSON text (shortened)
    reason: str  # the dead-letter reason the job would write


@dataclass(frozen=True)
class FieldFit:
    field: str
    column: str
    type: str
    state: str  # fits | partial | cannot_fit | no_values | not_checked
    fitting: int = 0
    total: int = 0  # sampled events with a value for the field (null and missing ones always fit)
    examples: list[FailedValue] = field(default_factory=list)
    accepted: bool = False  # the user accepts dead letters for this field

    @property
    def blocking(self) -> bool:
        return self.state == CANNOT_FIT and not self.accepted

    @property
    def message(self) -> str:
        if self.state == FITS:
            return f"Fits: all {self.total} sampled values convert to {self.type}."
        if self.state == PARTIAL:
            return (
                f"Fits {self.fitting} of {self.total} sampled values; "
                f"the other {self.total - self.fitting} would go to dead letters."
            )
        if self.state == CANNOT_FIT:
            return f"Cannot fit: none of the {self.total} sampled values converts to {self.type}."
        if self.state == NO_VALUES:
            return "No sampled event has a value for this field: nothing to check."
        return "Not checked (computed fields and Kafka metadata are not in the sample)."


@dataclass(frozen=True)
class KeyPresence:
    """How many sampled events lack a usable value for a dedup key or the event-time field."""

    field: str
    role: str  # "key" or "event_time"
    total: int
    missing: int  # missing or null
    unconvertible: int  # present, but does not convert to the field's type
    examples: list[FailedValue] = field(default_factory=list)

    @property
    def unusable(self) -> int:
        return self.missing + self.unconvertible

    @property
    def share(self) -> float:
        return self.unusable / self.total if self.total else 0.0

    @property
    def blocking(self) -> bool:
        return self.total > 0 and self.unusable == self.total

    @property
    def message(self) -> str:
        if not self.unusable:
            return ""
        what = "dedup key" if self.role == "key" else "event time"
        parts = []
        if self.missing:
            parts.append(f"{self.missing} miss it or have null")
        if self.unconvertible:
            parts.append(f"{self.unconvertible} have a value the engine cannot read")
        head = (
            f"No sampled event has a usable {what} '{self.field}'"
            if self.blocking
            else f"{self.share:.0%} of the sampled events have no usable {what} '{self.field}'"
        )
        return f"{head}: {'; '.join(parts)} (of {self.total}). Those events would go to dead letters."

    @property
    def short_message(self) -> str:
        """For the field a blocking finding belongs to (the detail is beside it)."""
        other = "another key" if self.role == "key" else "another field, or ingestion time"
        return f"No sampled event has a usable '{self.field}': choose {other}."


@dataclass(frozen=True)
class SampleReport:
    sampled: int  # JSON objects in the sample
    fields: list[FieldFit]
    keys: list[KeyPresence]
    event_time: KeyPresence | None = None

    @property
    def blocking(self) -> bool:
        return any(f.blocking for f in self.fields) or any(k.blocking for k in self.presences)

    @property
    def presences(self) -> list[KeyPresence]:
        return [*self.keys, *([self.event_time] if self.event_time else [])]

    def to_dict(self) -> dict[str, Any]:
        def fit(f: FieldFit) -> dict[str, Any]:
            return {**asdict(f), "message": f.message, "blocking": f.blocking}

        def presence(p: KeyPresence) -> dict[str, Any]:
            return {**asdict(p), "share": round(p.share, 4), "message": p.message, "blocking": p.blocking}

        return {
            "sampled": self.sampled,
            "blocking": self.blocking,
            "fields": [fit(f) for f in self.fields],
            "dedup_keys": [presence(k) for k in self.keys],
            "event_time": presence(self.event_time) if self.event_time else None,
        }


class SampleCheckError(SpecError):
    """A blocking sample check: the SpecError's issues name the spec paths; `extra["sample"]` the report."""

    def __init__(self, issues: list[SpecIssue], report: SampleReport) -> None:
        super().__init__(issues)
        self.report = report
        self.extra = {"sample": report.to_dict()}


def _shown(value: Any) -> str:
    text = conversion.json_text(value) or "null"
    return text if len(text) <= 60 else text[:57] + "…"


def objects(values: Sequence[Any]) -> list[dict[str, Any]]:
    """The sampled values the job can read fields from (others are dead letters whatever the mapping)."""
    return [v for v in values if isinstance(v, dict)]


def field_fit(
    *, values: Sequence[Any], field: str, field_type: str, column: str, column_type: str, accepted: bool = False
) -> FieldFit:
    """How many sampled values of `field` the job would write into `column` (of `column_type`); `not_checked`
    for a field or column type the conversion rules do not know (the spec check reports those)."""
    if not conversion.supported(field_type, column_type):
        return FieldFit(field, column, column_type, NOT_CHECKED)
    fitting = total = 0
    examples: list[FailedValue] = []
    for event in objects(values):
        value = conversion.lookup(event, field)
        if value is None or value is conversion.MISSING:
            continue
        total += 1
        outcome = conversion.convert(value, field_type=field_type, column_type=column_type, field=field, column=column)
        if outcome.ok:
            fitting += 1
        elif len(examples) < MAX_EXAMPLES and all(e.value != _shown(value) for e in examples):
            examples.append(FailedValue(_shown(value), outcome.reason))
    if not total:
        state = NO_VALUES
    elif fitting == total:
        state = FITS
    else:
        state = PARTIAL if fitting else CANNOT_FIT
    return FieldFit(field, column, column_type, state, fitting, total, examples, accepted and state == CANNOT_FIT)


def key_presence(*, values: Sequence[Any], field: str, field_type: str, role: str = "key") -> KeyPresence:
    """How many sampled events lack a usable `field` (a dedup key, or with role "event_time" the event time)."""
    missing = unconvertible = 0
    examples: list[FailedValue] = []
    events = objects(values)
    for event in events:
        if role == "key":
            outcome = conversion.key_outcome(event, field, field_type)
        else:
            outcome = conversion.event_time_outcome(event, field)
        if outcome.ok:
            continue
        if outcome.stage in ("key", "time"):
            missing += 1
        else:
            unconvertible += 1
            shown = _shown(conversion.lookup(event, field))
            if len(examples) < MAX_EXAMPLES and all(e.value != shown for e in examples):
                examples.append(FailedValue(shown, outcome.reason))
    return KeyPresence(field, role, len(events), missing, unconvertible, examples)


def sample_check(
    *, spec: PipelineSpec, values: Sequence[Any], accept_dead_letters: Collection[str] = ()
) -> SampleReport:
    """The report for a validated spec on sampled event values (the parsed JSON of each event)."""
    source_types = {f.path: f.type for f in spec.source.fields}
    fits = []
    for column in spec.sink.columns:
        if column.field not in source_types:
            fits.append(FieldFit(column.field, column.column, column.type, NOT_CHECKED))
            continue
        fits.append(
            field_fit(
                values=values,
                field=column.field,
                field_type=source_types[column.field],
                column=column.column,
                column_type=column.type,
                accepted=column.field in accept_dead_letters,
            )
        )
    keys: list[KeyPresence] = []
    event_time = None
    if spec.dedup is not None:
        keys = [key_presence(values=values, field=k, field_type=source_types[k]) for k in spec.dedup.keys]
        if spec.dedup.time == "event" and spec.dedup.event_time_field:
            event_time = key_presence(
                values=values, field=spec.dedup.event_time_field, field_type="datetime", role="event_time"
            )
    return SampleReport(len(objects(values)), fits, keys, event_time)


def report_issues(spec: PipelineSpec, report: SampleReport) -> list[SpecIssue]:
    """The blocking findings as spec issues (paths of the spec's fields)."""
    issues = []
    for i, fit in enumerate(report.fields):
        if fit.blocking:
            examples = "; ".join(f"{e.value}: {e.reason}" for e in fit.examples)
            issues.append(
                SpecIssue(
                    f"sink.columns[{i}].field",
                    f"'{fit.field}' cannot fit column '{fit.column}' ({fit.type}): none of the {fit.total} sampled "
                    f"values converts, e.g. {examples}. Fix the mapping, or accept dead letters for this field.",
                )
            )
    for i, key in enumerate(report.keys):
        if key.blocking:
            issues.append(SpecIssue(f"dedup.keys[{i}]", key.message))
    if report.event_time is not None and report.event_time.blocking:
        issues.append(SpecIssue("dedup.event_time_field", report.event_time.message))
    return issues


def check_accepted_fields(spec: PipelineSpec, accept_dead_letters: Collection[str]) -> None:
    """`accept_dead_letters` names mapped fields only (a Django ValidationError otherwise)."""
    from django.core.exceptions import ValidationError

    mapped = {c.field for c in spec.sink.columns}
    unknown = [name for name in accept_dead_letters if name not in mapped]
    if unknown:
        raise ValidationError({"accept_dead_letters": f"Not a mapped field: {', '.join(unknown)}."})


def sample_check_live(
    *,
    spec: PipelineSpec,
    kafka_connection: Any,
    accept_dead_letters: Collection[str] = (),
    count: int = LIVE_SAMPLE_SIZE,
    schema_registry_connection: Any = None,
) -> SampleReport:
    """The report on the newest `count` events of the spec's topics (the connections' sampling service; Avro
    values decoded with the registry's schemas). Raises SampleCheckError when a finding blocks;
    KafkaClientError / SchemaRegistryClientError when Kafka or the registry cannot be asked."""
    from webapp.connections import selectors as conn_selectors

    check_accepted_fields(spec, accept_dead_letters)
    events = conn_selectors.kafka_event_sample(
        connection=kafka_connection,
        topics=spec.source.topics,
        count=count,
        position="newest",
        schema_registry_connection=schema_registry_connection if spec.source.uses_registry else None,
    )
    report = sample_check(
        spec=spec, values=[e.value for e in events if e.is_json], accept_dead_letters=accept_dead_letters
    )
    issues = report_issues(spec, report)
    if spec.join is not None:
        from webapp.pipelines.join_preview import right_sample_issues

        right = conn_selectors.kafka_event_sample(
            connection=kafka_connection,
            topics=spec.join.source.topics,
            count=count,
            position="newest",
            schema_registry_connection=schema_registry_connection if spec.join.source.uses_registry else None,
        )
        issues += right_sample_issues(spec, right)
    if issues:
        raise SampleCheckError(issues, report)
    return report
