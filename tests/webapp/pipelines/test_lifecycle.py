"""The lifecycle's one table: what it allows, that `Pipeline.transition` holds to it, and that the docs draw it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pipeline_states import actions_to
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services
from webapp.pipelines.lifecycle import JOB_ACTIVE, JOB_WANTED, TRANSITIONS, Action, PipelineStatus, diagram, next_status
from webapp.pipelines.models import Pipeline

S, A = PipelineStatus, Action
DOC = Path(__file__).resolve().parents[3] / "docs" / "dev" / "lifecycle.md"


@pytest.mark.fast
def test_every_status_can_be_reached_from_draft_and_every_action_is_used():
    for status in S:
        actions_to(S.DRAFT, status)  # raises when unreachable
    assert {action for _, action in TRANSITIONS} == set(A)


@pytest.mark.fast
def test_what_a_person_and_the_worker_may_do_in_each_status():
    assert next_status("draft", A.DEPLOY) == S.DEPLOY_REQUESTED
    assert next_status("stop_requested", A.DEPLOY) is None  # no deploy while a stop is under way
    assert next_status("draft", A.RESUME) is None  # never deployed: nothing to resume
    assert next_status("running", A.WITHDRAW) is None  # a job runs: stop it instead
    assert next_status("stopped", A.JOB_FAILED) is None  # a late failure report changes nothing
    assert next_status("failed", A.RESTART) == S.DEPLOY_REQUESTED
    assert next_status("archived", A.DEPLOY) is None  # a value this version does not know


@pytest.mark.fast
def test_job_statuses_are_read_from_the_table():
    assert {S.DEPLOY_REQUESTED, S.RUNNING, S.STOP_REQUESTED} == JOB_ACTIVE
    assert {S.DEPLOY_REQUESTED, S.RUNNING} == JOB_WANTED


@pytest.mark.fast
def test_the_docs_draw_the_table():
    block = re.search(r"```mermaid\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert block is not None, f"{DOC} has no mermaid block"
    assert block.group(1) == diagram(), f"redraw {DOC} from webapp.pipelines.lifecycle.diagram()"


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    return services.pipeline_create(
        owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )


def test_transition_applies_exactly_the_table(pipeline):
    for status in S:
        for action in A:
            Pipeline.objects.filter(pk=pipeline.pk).update(status=status)
            before = pipeline.transitions.count()
            changed = pipeline.transition(action, message=f"{action} from {status}")
            expected = TRANSITIONS.get((status, action))
            assert changed == (expected is not None), (status, action)
            assert pipeline.status == (expected or status)
            assert pipeline.transitions.count() == before + changed
            if changed:
                last = pipeline.transitions.first()
                assert (last.from_status, last.to_status, last.reason) == (status, expected, f"{action} from {status}")
