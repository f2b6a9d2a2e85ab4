"""The API side of exactly-once on an existing table (`webapp.pipelines.exactly_once`): the `delivery` and
`warnings` of the validation answers and of the pipeline's detail, and the endpoint that applies the fix."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from clearflow_spec.exactly_once import AT_LEAST_ONCE, EXACTLY_ONCE, InsertDedup
from webapp.api.errors import ERROR_RESPONSES
from webapp.pipelines import exactly_once, selectors
from webapp.pipelines.models import Pipeline

TAG = ["Pipelines"]


class DeliveryGuaranteeOutput(serializers.Serializer):
    guarantee = serializers.ChoiceField(
        [EXACTLY_ONCE, AT_LEAST_ONCE, "unknown"],
        help_text="exactly-once when the target table drops replayed inserts (or ClearFlow creates it).",
    )
    reason = serializers.CharField()
    fix_sql = serializers.CharField(
        allow_null=True,
        help_text="The statement that makes the table drop replays; POST .../pipelines/{id}/table-dedup/ runs it.",
    )


class ValidationWarningOutput(serializers.Serializer):
    path = serializers.CharField()
    message = serializers.CharField()
    fix_sql = serializers.CharField(allow_null=True)


def delivery_data(result: InsertDedup | None, unknown_reason: str = "") -> dict[str, Any]:
    if result is None:
        return {"guarantee": "unknown", "reason": unknown_reason, "fix_sql": None}
    return {"guarantee": result.guarantee, "reason": result.reason, "fix_sql": result.fix_sql}


def validation_data(parsed: Any, *, clickhouse_connection: Any, check_live: bool) -> dict[str, Any]:
    """The validation answer; with check_live, the target table's guarantee, and a warning when a replayed
    micro-batch would be written twice."""
    out: dict[str, Any] = {"valid": True, "spec": parsed.to_dict(), "delivery": None, "warnings": []}
    if check_live and clickhouse_connection is not None:
        result = exactly_once.spec_insert_dedup(parsed=parsed, connection=clickhouse_connection)
        out["delivery"] = delivery_data(result)
        if not result.exactly_once:
            fix = f" Run {result.fix_sql} to make it exactly-once." if result.fix_sql else ""
            out["warnings"].append(
                {"path": "sink.table", "message": f"At-least-once: {result.reason}.{fix}", "fix_sql": result.fix_sql}
            )
    return out


class TableDedupEnableApi(APIView):
    workspace_model = Pipeline

    @extend_schema(
        tags=TAG,
        operation_id="pipelines_table_dedup_enable",
        description=(
            "Make the pipeline's existing target table drop replayed inserts: runs the `fix_sql` that "
            "`delivery` shows (`ALTER TABLE ... MODIFY SETTING non_replicated_deduplication_window = N`)."
        ),
        request=None,
        responses={200: DeliveryGuaranteeOutput, **ERROR_RESPONSES},
    )
    def post(self, request: Request, pk: int) -> Response:
        pipeline = selectors.pipeline_get(user=request.user, pk=pk)
        result = exactly_once.pipeline_table_dedup_enable(pipeline=pipeline)
        return Response(DeliveryGuaranteeOutput(delivery_data(result)).data)


__all__ = [
    "DeliveryGuaranteeOutput",
    "TableDedupEnableApi",
    "ValidationWarningOutput",
    "delivery_data",
    "validation_data",
]
