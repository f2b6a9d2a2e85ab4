"""Where a pipeline stands in its topics, read from its checkpoint's offset log: no Spark, no broker.

Spark's streaming checkpoint has an offset log (`offsets/<batch>`: written when a micro-batch is planned) and a
commit log (`commits/<batch>`: written once the batch's sink and state are done). The offsets of the newest batch
with a commit are what the pipeline has committed: a restart reads on from there. Each offset file is

    v1
    {"batchWatermarkMs":...,"batchTimestampMs":...,"conf":{...}}
    {"<topic>":{"<partition>":<next offset>,...}}        one line per source (a join has two)

The worker reads it (`worker.lag`) from a local checkpoint, or one on S3 (s3a://, `committed_offsets_on_s3`);
another remote one (hdfs://) is read from the job's metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from spark_jobs.object_store import bucket_of, key_prefix
from spark_jobs.s3_client import S3Error

if TYPE_CHECKING:
    from spark_jobs.s3_client import S3Client

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


def committed_offsets_on_s3(checkpoint: str, client: S3Client | None = None) -> Offsets | None:
    """`committed_offsets` of a checkpoint on S3 (`s3a://bucket/prefix`); S3Error when S3 cannot be read."""
    from spark_jobs.s3_client import S3Client

    client = client or S3Client.from_env()
    bucket, prefix = bucket_of(checkpoint), key_prefix(checkpoint)
    commits = sorted(
        (int(name) for key in client.keys(bucket, f"{prefix}commits/") if (name := key.rsplit("/", 1)[-1]).isdigit()),
        reverse=True,
    )
    for batch in commits:
        try:
            offsets = parse_offset_file(client.read(bucket, f"{prefix}offsets/{batch}").decode())
        except S3Error as exc:
            if exc.status == 404:  # removed by the log's clean-up meanwhile: an older one will do
                continue
            raise
        if offsets:
            return offsets
    return None


__all__ = ["Offsets", "committed_offsets", "committed_offsets_on_s3", "parse_offset_file"]
