"""Duplicate audits: which ClickHouse tables are checked for duplicate keys, and what each check found.

An `AuditedTable` is either a running pipeline's table (created and kept in step with the pipeline's spec by
`services.audited_tables_sync_pipelines`) or a table a user added by hand. Every check writes one
`AuditResult` per window (the last hour, and the pipeline's dedup window when it differs): the time series
the pipeline page, the API, `/metrics` and the alerts read.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from webapp.connections.models import database_validator
from webapp.core.models import TimeStampedModel

HOUR_SECONDS = 3600
# ClickHouse identifiers the audit writes into SQL (quoted there as well): plain names only.
identifier_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]{0,254}\Z", "Use letters, digits and '_', not starting with a digit."
)
MAX_KEY_COLUMNS = 16


class AuditedTable(TimeStampedModel):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="audited_tables")
    # Who added it; access is by workspace membership (webapp.workspaces.policy).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="audited_tables")
    connection = models.ForeignKey(
        "connections.ClickHouseConnection", on_delete=models.CASCADE, related_name="audited_tables"
    )
    database = models.CharField(max_length=255, validators=[database_validator])
    table = models.CharField(max_length=255, validators=[identifier_validator])
    key_columns = models.JSONField(help_text="the columns that identify an event (a list of column names)")
    time_column = models.CharField(
        max_length=255, validators=[identifier_validator], help_text="bounds the check to recent rows"
    )
    # A second window checked besides the last hour (a pipeline's dedup window); None: the hour only.
    extra_window_seconds = models.PositiveIntegerField(null=True, blank=True)
    # Set for a pipeline's own table (kept in step with its spec); null for tables added by hand.
    pipeline = models.OneToOneField(
        "pipelines.Pipeline", on_delete=models.CASCADE, null=True, blank=True, related_name="audited_table"
    )

    class Meta:
        ordering = ["database", "table", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "connection", "database", "table"],
                condition=models.Q(pipeline__isnull=True),
                name="audited_table_unique_by_hand",
            )
        ]

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def windows(self) -> list[int]:
        """The windows (seconds) each check covers: the hour first."""
        extra = self.extra_window_seconds
        return [HOUR_SECONDS] + ([extra] if extra and extra != HOUR_SECONDS else [])

    def clean(self) -> None:
        keys = self.key_columns
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise ValidationError({"key_columns": "Give at least one key column."})
        if len(keys) > MAX_KEY_COLUMNS:
            raise ValidationError({"key_columns": f"At most {MAX_KEY_COLUMNS} key columns."})
        if len(set(keys)) != len(keys):
            raise ValidationError({"key_columns": "A key column is listed twice."})
        for key in keys:
            try:
                identifier_validator(key)
            except ValidationError:
                raise ValidationError(
                    {"key_columns": f"{key!r}: use letters, digits and '_', not starting with a digit."}
                ) from None
        if self.connection_id and self.workspace_id and self.connection.workspace_id != self.workspace_id:
            raise ValidationError({"connection": "No such connection."})


class AuditResult(models.Model):
    """One check of one window. `duplicate_keys` / `duplicate_rows` are None when the check failed (`error`)."""

    audited_table = models.ForeignKey(AuditedTable, on_delete=models.CASCADE, related_name="results")
    checked_at = models.DateTimeField(default=timezone.now)
    window_seconds = models.PositiveIntegerField()
    duplicate_keys = models.BigIntegerField(null=True, blank=True, help_text="keys that occur more than once")
    duplicate_rows = models.BigIntegerField(null=True, blank=True, help_text="rows carrying those keys")
    elapsed_ms = models.PositiveIntegerField(default=0)
    query = models.TextField(help_text="the exact query, runnable as it is")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-checked_at", "-id"]
        indexes = [
            models.Index(fields=["audited_table", "window_seconds", "-checked_at"], name="audit_result_latest"),
            models.Index(fields=["checked_at"], name="audit_result_checked_at"),
        ]

    def __str__(self) -> str:
        return f"{self.audited_table_id} @ {self.checked_at:%Y-%m-%d %H:%M}: {self.duplicate_keys}"

    @property
    def ok(self) -> bool:
        return not self.error
