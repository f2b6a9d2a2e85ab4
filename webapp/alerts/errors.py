"""Delivery errors, sorted the way the delivery task's retry policy needs them (no Django imports: the task's
decorator names them when `worker.tasks` is imported)."""

from __future__ import annotations


class DeliveryError(Exception):
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RetryableDeliveryError(DeliveryError):
    """Timeouts, connection errors, HTTP 5xx and 429, SMTP 4xx: tried again with backoff."""

    retryable = True


class PermanentDeliveryError(DeliveryError):
    """Other HTTP 4xx, SMTP 5xx, a host in a forbidden network: recorded, not retried."""
