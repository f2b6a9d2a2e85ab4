"""Which `show` and `submit` each step slug uses (the view dispatches through HANDLERS).

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict

from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.clickhouse import clickhouse_show, clickhouse_submit
from webapp.wizard.steps.dedup import dedup_show, dedup_submit
from webapp.wizard.steps.join import join_show, join_submit
from webapp.wizard.steps.kafka import kafka_show, kafka_submit
from webapp.wizard.steps.mapping import mapping_show, mapping_submit
from webapp.wizard.steps.review import review_show, review_submit
from webapp.wizard.steps.sample import sample_show, sample_submit
from webapp.wizard.steps.topics import topics_show, topics_submit
from webapp.wizard.steps.transform import transform_show, transform_submit

ShowFn = Callable[[HttpRequest, WizardDraft, MultiValueDict | None], dict[str, Any]]
SubmitFn = Callable[[HttpRequest, WizardDraft], dict[str, Any] | None]

HANDLERS: dict[str, tuple[ShowFn, SubmitFn]] = {
    "kafka": (kafka_show, kafka_submit),
    "topics": (topics_show, topics_submit),
    "sample": (sample_show, sample_submit),
    "dedup": (dedup_show, dedup_submit),
    "join": (join_show, join_submit),
    "transform": (transform_show, transform_submit),
    "clickhouse": (clickhouse_show, clickhouse_submit),
    "mapping": (mapping_show, mapping_submit),
    "review": (review_show, review_submit),
}
