"""Specs and events for the join tests: orders (left) joined with payments (right) on order_id."""

from __future__ import annotations

import uuid
from typing import Any


def join_spec(
    *,
    kafka_bootstrap: str,
    clickhouse: Any,
    orders: str,
    payments: str,
    window: str = "30m",
    join_type: str = "inner",
    table: str | None = None,
) -> dict:
    """Orders {"order_id", "amount"} deduplicated on order_id; payments {"payment_id", "order_id", "paid"}
    deduplicated on payment_id; joined on order_id."""
    kafka = {"bootstrap_servers": kafka_bootstrap}
    return {
        "version": 2,
        "name": f"j-{uuid.uuid4().hex[:8]}",
        "source": {
            "kafka": kafka,
            "topics": [orders],
            "fields": [{"path": "order_id", "type": "string"}, {"path": "amount", "type": "int"}],
        },
        "dedup": {"keys": ["order_id"], "window": "1h"},
        "join": {
            "source": {
                "kafka": kafka,
                "topics": [payments],
                "fields": [
                    {"path": "payment_id", "type": "string"},
                    {"path": "order_id", "type": "string"},
                    {"path": "paid", "type": "int"},
                ],
            },
            "dedup": {"keys": ["payment_id"], "window": "1h"},
            "keys": [{"left": "order_id", "right": "order_id"}],
            "window": window,
            "type": join_type,
        },
        "sink": {
            "clickhouse": {"host": clickhouse.host, "port": clickhouse.port},
            "table": table or f"j_{uuid.uuid4().hex[:10]}",
            "order_by": ["order_id"],
            "columns": [
                {"field": "left.order_id", "column": "order_id", "type": "String"},
                {"field": "left.amount", "column": "amount", "type": "Int64"},
                {"field": "right.payment_id", "column": "payment_id", "type": "Nullable(String)"},
                {"field": "right.paid", "column": "paid", "type": "Nullable(Int64)"},
            ],
        },
    }


def order(order_id: str, amount: int = 10) -> dict:
    return {"order_id": order_id, "amount": amount}


def payment(payment_id: str, order_id: str, paid: int = 10) -> dict:
    return {"payment_id": payment_id, "order_id": order_id, "paid": paid}
