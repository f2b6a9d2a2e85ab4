"""One form per wizard step, and the choice between a saved and a new connection (a new connection's own form is
the connections app's: `webapp.connections.forms`). Validation that needs no I/O lives here; checks against
Kafka, ClickHouse or the spec module happen in `webapp.wizard.steps`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django import forms

from clearflow_spec.spec import DEDUP_WINDOWS
from webapp.connections.models import KafkaConnection, SchemaRegistryConnection

SOURCE_CHOICES = [("saved", "A saved connection"), ("new", "A new connection")]

WINDOW_PRESETS = [*DEDUP_WINDOWS, ("custom", "Custom…")]
ENGINE_CHOICES = [("MergeTree", "MergeTree"), ("ReplacingMergeTree", "ReplacingMergeTree")]
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*\Z")


class _ConnectionChoiceForm(forms.Form):
    source = forms.ChoiceField(choices=SOURCE_CHOICES, widget=forms.RadioSelect, initial="saved")
    connection = forms.ModelChoiceField(
        queryset=KafkaConnection.objects.none(), required=False, empty_label="Choose a connection…"
    )

    def __init__(self, *args, connections=None, **kwargs):
        super().__init__(*args, **kwargs)
        if connections is not None:
            self.fields["connection"].queryset = connections
        if connections is not None and not connections.exists():
            self.fields["source"].initial = "new"
        # Needed when "A saved connection" is chosen (checked in clean()): not marked "(optional)".
        self.fields["connection"].optional_hint = False

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("source") == "saved" and not cleaned.get("connection"):
            self.add_error("connection", "Choose a saved connection, or enter a new one.")
        return cleaned


class KafkaChoiceForm(_ConnectionChoiceForm):
    pass


class ClickHouseChoiceForm(_ConnectionChoiceForm):
    pass


class SchemaRegistryChoiceForm(_ConnectionChoiceForm):
    pass


FORMAT_CHOICES = [
    ("json", "JSON"),
    ("avro", "Avro, schemas in a schema registry"),
    ("protobuf", "Protobuf, schemas in a schema registry"),
]
REGISTRY_FORMATS = ("avro", "protobuf")  # the formats whose schemas come from a schema registry


class SampleForm(forms.Form):
    count = forms.IntegerField(label="Events", min_value=1, max_value=500, initial=20)
    position = forms.ChoiceField(
        label="From", choices=[("newest", "Newest"), ("oldest", "Oldest")], initial="newest", widget=forms.RadioSelect
    )
    # Not required: a form posted without it (an older page) reads JSON, as before there was a choice.
    format = forms.ChoiceField(
        label="Format", choices=FORMAT_CHOICES, initial="json", required=False, widget=forms.RadioSelect
    )
    schema_registry = forms.ModelChoiceField(
        label="Schema registry",
        queryset=SchemaRegistryConnection.objects.none(),
        required=False,
        empty_label="Choose a schema registry…",
    )

    def __init__(self, *args, registries=None, **kwargs):
        super().__init__(*args, **kwargs)
        if registries is not None:
            self.fields["schema_registry"].queryset = registries
        self.fields["schema_registry"].optional_hint = False  # needed for Avro (checked in clean())

    def clean(self):
        cleaned = super().clean()
        cleaned["format"] = cleaned.get("format") or "json"
        if cleaned["format"] in REGISTRY_FORMATS and not cleaned.get("schema_registry"):
            kind = "Avro" if cleaned["format"] == "avro" else "Protobuf"
            self.add_error("schema_registry", f"{kind} events need the schema registry that holds their schemas.")
        return cleaned


class DedupForm(forms.Form):
    enabled = forms.ChoiceField(
        label="Deduplication",
        choices=[("on", "Drop duplicates"), ("off", "Off: keep every event")],
        initial="on",
        widget=forms.RadioSelect,
    )
    keys = forms.MultipleChoiceField(
        label="Key field(s)",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Events with the same values in all these fields are duplicates.",
    )
    window = forms.ChoiceField(label="Window", choices=WINDOW_PRESETS, initial="1h", required=False)
    custom_window = forms.CharField(
        label="Custom window",
        required=False,
        max_length=20,
        help_text="A number and a unit: s, m, h or d (e.g. 90m, 2d).",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 90m"}),
    )
    time_basis = forms.ChoiceField(
        label="Time basis",
        choices=[
            ("ingestion", "Ingestion time (when ClearFlow reads the event)"),
            ("event_time", "An event-time field"),
        ],
        initial="ingestion",
        widget=forms.RadioSelect,
        required=False,
    )
    event_time_field = forms.ChoiceField(label="Event-time field", required=False)

    def __init__(self, *args, field_paths=(), time_paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["keys"].choices = [(p, p) for p in field_paths]
        # Needed when deduplication is on (checked in clean()): not marked "(optional)".
        for name in ("window", "custom_window", "event_time_field"):
            self.fields[name].optional_hint = False
        self.fields["event_time_field"].choices = [("", "Choose a field…")] + [(p, p) for p in time_paths]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("enabled") != "on":
            return cleaned
        if not cleaned.get("keys"):
            self.add_error("keys", "Choose at least one key field, or turn deduplication off.")
        if not cleaned.get("window"):
            self.add_error("window", "Choose a window.")
        elif cleaned["window"] == "custom" and not cleaned.get("custom_window"):
            self.add_error("custom_window", "Enter a window, e.g. 90m or 2d.")
        if cleaned.get("time_basis") == "event_time" and not cleaned.get("event_time_field"):
            self.add_error("event_time_field", "Choose the field that holds the event time.")
        return cleaned


# The dedup presets and the join's default (30m: "a payment within 30 minutes of its order"), in order.
JOIN_WINDOW_PRESETS = [*DEDUP_WINDOWS[:3], ("30m", "30 minutes"), *DEDUP_WINDOWS[3:], ("custom", "Custom…")]


class JoinForm(forms.Form):
    """The join step's own fields. The right side's schema rows (`r<n>-...`), its dedup (a DedupForm prefixed
    `right`) and the key rows (`k<n>-left`, `k<n>-right`) are read beside it (`webapp.wizard.steps.join`)."""

    enabled = forms.ChoiceField(
        label="Join",
        choices=[("off", "No join: write this topic's events alone"), ("on", "Join another topic")],
        initial="off",
        widget=forms.RadioSelect,
    )
    right_topic = forms.ChoiceField(label="Topic to join", required=False)
    count = forms.IntegerField(label="Events", min_value=1, max_value=500, initial=20, required=False)
    # "span": over the time of this topic's sample, so that events which join meet in the preview
    # (`webapp.wizard.steps.join_sample`).
    position = forms.ChoiceField(
        label="From",
        choices=[("span", "Same time"), ("newest", "Newest"), ("oldest", "Oldest")],
        initial="span",
        widget=forms.RadioSelect,
        required=False,
    )
    window = forms.ChoiceField(
        label="Join window",
        choices=JOIN_WINDOW_PRESETS,
        initial="30m",
        required=False,
        help_text="How far apart in time the two events may be, e.g. a payment within 30 minutes of its order.",
    )
    custom_window = forms.CharField(
        label="Custom join window",
        required=False,
        max_length=20,
        help_text="A number and a unit: s, m, h or d (e.g. 90m, 2d).",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 90m"}),
    )
    type = forms.ChoiceField(
        label="Events without a match",
        choices=[
            ("inner", "Inner: write only the events that found a match"),
            ("left", "Left: also write the others, with empty columns of the joined topic, once the window passed"),
        ],
        initial="inner",
        widget=forms.RadioSelect,
        required=False,
    )
    time = forms.ChoiceField(
        label="Join time",
        choices=[
            ("ingestion", "Ingestion time (the Kafka timestamps)"),
            ("event", "An event-time field on each side"),
        ],
        initial="ingestion",
        widget=forms.RadioSelect,
        required=False,
    )
    left_time_field = forms.ChoiceField(label="Event-time field of this topic", required=False)
    # Typed, with the joined topic's datetime fields suggested (a datalist the sample fetch refreshes); the join's
    # rules check that it is one of them.
    right_time_field = forms.CharField(
        label="Event-time field of the joined topic",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"list": "right-datetime-fields", "placeholder": "e.g. paid_at"}),
    )

    def __init__(self, *args, topics=(), left_time_paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["right_topic"].choices = [("", "Choose a topic…")] + [(t, t) for t in topics]
        self.fields["left_time_field"].choices = [("", "Choose a field…")] + [(p, p) for p in left_time_paths]
        # Needed when the join is on (checked in clean()): not marked "(optional)".
        for name in ("right_topic", "window", "custom_window", "left_time_field", "right_time_field"):
            self.fields[name].optional_hint = False

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("enabled") != "on":
            return cleaned
        if not cleaned.get("right_topic"):
            self.add_error("right_topic", "Choose the topic to join.")
        if not cleaned.get("window"):
            self.add_error("window", "Choose a window.")
        elif cleaned["window"] == "custom" and not cleaned.get("custom_window"):
            self.add_error("custom_window", "Enter a window, e.g. 90m or 2d.")
        cleaned["type"] = cleaned.get("type") or "inner"
        cleaned["time"] = cleaned.get("time") or "ingestion"
        if cleaned["time"] == "event":
            for name in ("left_time_field", "right_time_field"):
                if not cleaned.get(name):
                    self.add_error(name, "Choose the field that holds the event time.")
        return cleaned

    @property
    def chosen_window(self) -> str:
        data = self.cleaned_data
        return data["custom_window"].strip() if data.get("window") == "custom" else data.get("window") or ""


class TransformForm(forms.Form):
    explode = forms.ChoiceField(
        label="One row per element of",
        required=False,
        help_text="An array field whose elements each become a row, with the event's other fields (after dedup).",
    )
    filter = forms.CharField(
        label="Filter",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "e.g. event_type <> 'heartbeat' AND amount > 0"}),
        help_text="A SQL condition; only events for which it is true are kept. Leave empty to keep all.",
    )

    def __init__(self, *args: Any, array_fields: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["explode"].choices = [("", "none: one row per event"), *((path, path) for path in array_fields)]
        if not array_fields:
            del self.fields["explode"]


class DestinationForm(forms.Form):
    database = forms.CharField(label="Database", max_length=255)
    table_mode = forms.ChoiceField(
        label="Table",
        choices=[("existing", "An existing table"), ("new", "A new table")],
        initial="new",
        widget=forms.RadioSelect,
    )
    table = forms.CharField(label="Existing table", required=False, max_length=255)
    new_table = forms.CharField(label="New table name", required=False, max_length=200)
    engine = forms.ChoiceField(label="Engine", choices=ENGINE_CHOICES, initial="ReplacingMergeTree", required=False)
    order_by = forms.MultipleChoiceField(
        label="ORDER BY", required=False, widget=forms.CheckboxSelectMultiple, help_text="The sorting key, in order."
    )

    def __init__(self, *args, field_paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["order_by"].choices = [(p, p) for p in field_paths]
        for name in ("table", "new_table", "engine", "order_by"):
            self.fields[name].optional_hint = False

    def clean(self):
        cleaned = super().clean()
        mode = cleaned.get("table_mode")
        if mode == "existing" and not cleaned.get("table"):
            self.add_error("table", "Choose a table.")
        if mode == "new":
            name = cleaned.get("new_table") or ""
            if not name:
                self.add_error("new_table", "Enter a name for the new table.")
            elif not IDENTIFIER.match(name):
                self.add_error("new_table", "Use letters, digits and underscores; start with a letter.")
            if not cleaned.get("order_by"):
                self.add_error("order_by", "Choose at least one field for ORDER BY.")
        return cleaned


class ReviewForm(forms.Form):
    name = forms.CharField(
        label="Pipeline name",
        max_length=100,
        help_text="Letters, digits, '-', '_' and '.', e.g. user-events-to-clickhouse.",
    )
    starting_offsets = forms.ChoiceField(
        label="Start reading from",
        choices=[("earliest", "The oldest event still in the topic"), ("latest", "New events only")],
        initial="earliest",
        widget=forms.RadioSelect,
    )
