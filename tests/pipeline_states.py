"""Put a pipeline in a status for a test the way the product gets there: through the lifecycle's actions."""

from __future__ import annotations

from collections import deque
from typing import Any

from webapp.pipelines.lifecycle import TRANSITIONS, Action, PipelineStatus


def actions_to(start: str, goal: str) -> list[Action]:
    """The shortest list of actions from `start` to `goal` in the lifecycle's table."""
    paths: dict[str, list[Action]] = {start: []}
    todo = deque([start])
    while todo:
        status = todo.popleft()
        if status == goal:
            return paths[status]
        for (source, action), target in TRANSITIONS.items():
            if source == status and target not in paths:
                paths[target] = [*paths[status], action]
                todo.append(target)
    raise ValueError(f"the lifecycle has no way from {start} to {goal}")


def walk_to(pipeline: Any, goal: PipelineStatus | str, *, message: str = "", **extra: Any) -> Any:
    """Move `pipeline` to `goal` by the lifecycle's actions (each one recorded); the last one carries `message` and
    `extra` columns. Returns the pipeline, refreshed."""
    pipeline.refresh_from_db()
    actions = actions_to(pipeline.status, str(goal))
    for i, action in enumerate(actions):
        last = i == len(actions) - 1
        assert pipeline.transition(action, **({"message": message, **extra} if last else {})), action
    return pipeline
