"""The checks on a checkpoint made by an earlier engine: state this version cannot continue from is refused in
words before the query starts (Spark would fail with a long stack, or a join would start without the events it
held)."""

from __future__ import annotations

import json
import re

from clearflow_spec.protocol import local_checkpoint_path


class CheckpointMismatch(RuntimeError):
    """The checkpoint holds state this engine cannot continue from; the message says what to do."""


OLD_DEDUP_OPERATORS = ("dedupeWithinWatermark", "dedupe")  # dropDuplicates(WithinWatermark), before the JVM dedup
# The join's state variables (io.clearflow.spark.JoinProcessor) and the type earlier versions kept them in.
JOIN_STATE_VARIABLES = ("left_events", "right_events")
OLD_JOIN_STATE_TYPE = "MapState"
_OPERATOR_NAME_RE = re.compile(r'"operatorName"\s*:\s*"([^"]+)"')


def _state_variables(text: str) -> set[tuple[str, str]]:
    """(name, type) of the state variables an operator's metadata file (state/<id>/_metadata/v2/<batch>: a
    version line, then JSON whose `operatorPropertiesJson` is JSON again) lists; empty for other files."""
    found: set[tuple[str, str]] = set()
    for line in text.splitlines():
        try:
            properties = json.loads(json.loads(line).get("operatorPropertiesJson") or "{}")
            variables = properties.get("stateVariables") or []
        except (ValueError, AttributeError):
            continue
        for variable in variables:
            if isinstance(variable, dict):
                found.add((str(variable.get("stateName")), str(variable.get("stateVariableType"))))
    return found


def check_checkpoint_state(checkpoint: str) -> None:
    """CheckpointMismatch when a local checkpoint holds state this engine cannot continue from, where Spark would
    fail with a long stack (or, for the join, start without the events it held): the dedup state of the
    watermark-based operator of earlier versions, or a join's events in the MapStates of earlier versions. The
    message says to reset the checkpoint."""
    local = local_checkpoint_path(checkpoint)
    if local is None:
        return  # a remote checkpoint: Spark's own error stands
    state = local / "state"
    names: set[str] = set()
    variables: set[tuple[str, str]] = set()
    for path in state.glob("*/_metadata/**/*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            text = path.read_text(errors="replace")
            names.update(_OPERATOR_NAME_RE.findall(text))
            variables.update(_state_variables(text))
    old = sorted(names & set(OLD_DEDUP_OPERATORS))
    if old:
        raise CheckpointMismatch(
            f"the checkpoint {checkpoint} holds dedup state of an earlier ClearFlow engine ({', '.join(old)}), "
            "which this version cannot read: reset the pipeline's checkpoint (the job then starts from the "
            "topic's committed offsets with an empty dedup window)"
        )
    if any((name, OLD_JOIN_STATE_TYPE) in variables for name in JOIN_STATE_VARIABLES):
        raise CheckpointMismatch(
            f"the checkpoint {checkpoint} holds join state of an earlier ClearFlow engine (each side's events in "
            "a MapState), which this version cannot read: reset the pipeline's checkpoint (the job then starts "
            "from the topics' committed offsets with empty dedup and join windows; events the join was holding "
            "for the other side are not joined)"
        )
