"""Where a pipeline stands in its topics, read from its checkpoint's offset log: no Spark, no broker.

Spark's streaming checkpoint has an offset log (`offsets/<batch>`: written when a micro-batch is planned) and a
commit log (`commits/<batch>`: written once the batch's sink and state are done). The offsets of the newest batch
with a commit are what the pipeline has committed: a restart reads on from there. Each offset file is

    v1
    {"batchWatermarkMs":...,"batchTimestampMs":...,"conf":{...}}
    {"<topic>":{"<partition>":<next offset>,...}}        one line per source (a join has two)

The worker reads it (`worker.lag`) for a local checkpoint; a remote one (s3a://) is read from the job's metrics.
"""

from __future__ import annotations

import json
from pathlib import Path

Offsets = dict[str, dict[str, int]]  # topic -> partition (as text) -> next offset to read


def _batch_ids(directory: Path) -> list[int]:
    try:
        names = [entry.name for entry in directory.iterdir()]
    except OSError:
        return []
    return sorted(int(name) for name in names if name.isdigit())


def parse_offset_file(text: str) -> Offsets:
    """The sources' offsets of one offset-log file (topics of every source merged); {} for a file that is not one."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("v"):
        return {}
    offsets: Offsets = {}
    for line in lines[2:]:
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if not isinstance(source, dict):
            continue
        for topic, parts in source.items():
            if isinstance(parts, dict):
                offsets.setdefault(str(topic), {}).update(
                    {str(p): int(o) for p, o in parts.items() if isinstance(o, int)}
                )
    return offsets


def committed_offsets(checkpoint: Path) -> Offsets | None:
    """The offsets of the newest committed batch of the checkpoint at `checkpoint`; None when it has none yet
    (a new pipeline whose first batch has not finished, or no checkpoint at all)."""
    for batch in reversed(_batch_ids(checkpoint / "commits")):
        try:
            text = (checkpoint / "offsets" / str(batch)).read_text()
        except OSError:  # removed by the log's clean-up meanwhile: an older one will do
            continue
        offsets = parse_offset_file(text)
        if offsets:
            return offsets
    return None


__all__ = ["Offsets", "committed_offsets", "parse_offset_file"]
