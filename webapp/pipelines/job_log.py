"""A job's log as the pipeline page shows it: ClearFlow's own lines apart from Spark's, which the page hides
until asked (Spark's start-up banner, its log4j lines and the JVM's stack traces under them).

- ClearFlow's: the job's logging (`2026-11-25 15:01:03,076 ERROR clearflow.run ...`, `spark_jobs.*` too), the
  wrapper's lines (`clearflow: job starting ...`), and any line of unknown origin (shown: it may matter);
- Spark's: log4j lines (`26/11/25 15:00:59 WARN Executor: ...`), the banner Spark and the JVM print at start,
  and the lines that continue a Spark line: indented (`\tat org.apache...`), an exception's name
  (`org.apache.spark.SparkException: ...`), `Caused by:`, a Python traceback inside a Spark error.
A line that continues one of ClearFlow's (a traceback after an ERROR) stays with it.

The line the job logs for each micro-batch (its metrics record, JSON) is put in words: "15:00:40 batch 7:
149,114 events in 53.7 s, 13,449 duplicates dropped, 135,665 rows written"; the page keeps the raw line behind a
toggle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

Source = Literal["clearflow", "spark"]

_CLEARFLOW = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ [A-Z]+ (clearflow|spark_jobs|worker)\b|clearflow: )")
_LOG4J = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")
_SPARK_BANNER = re.compile(
    r"^(WARNING: Using incubator modules|Using Spark's default log4j profile|Setting default log level to"
    r"|To adjust logging level use sc\.setLogLevel|WARNING: An illegal reflective access|:: loading settings"
    r"|Ivy Default Cache|Picked up (JAVA_TOOL_OPTIONS|_JAVA_OPTIONS))"
)
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d)[,.]\d+ INFO clearflow\.metrics (\{.*\})\s*$")
_CONTINUATION = re.compile(r"^(\s|Caused by:|Traceback |\.\.\. \d+ more|[\w.$]+(Exception|Error)\b(:|$))")


@dataclass(frozen=True)
class LogLine:
    text: str
    source: Source
    words: str | None = None  # a batch's metrics record in words (the raw line is `text`)

    @property
    def is_spark(self) -> bool:
        return self.source == "spark"


def job_log_lines(lines: list[str]) -> list[LogLine]:
    """Each line with whose it is (see the module's docstring)."""
    out: list[LogLine] = []
    previous: Source = "clearflow"
    for text in lines:
        if _CLEARFLOW.match(text):
            source: Source = "clearflow"
        elif _LOG4J.match(text) or _SPARK_BANNER.match(text):
            source = "spark"
        elif _CONTINUATION.match(text) or not text.strip():
            source = previous
        else:
            source = "clearflow"
        out.append(LogLine(text, source, batch_words(text) if source == "clearflow" else None))
        previous = source
    return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def batch_words(text: str) -> str | None:
    """A metrics record's line in words; None for any other line (or a record that does not read)."""
    match = _RECORD.match(text)
    if match is None:
        return None
    try:
        record = json.loads(match.group(2))
        batch, events = int(record["batch_id"]), int(record["input_rows"])
        seconds = int(record["batch_duration_ms"]) / 1000
        parts = [f"batch {batch}: {_count(events, 'event')} in {seconds:.1f} s"]
        for key, one, many in (
            ("duplicates_dropped", "duplicate dropped", "duplicates dropped"),
            ("filtered_out", "filtered out", "filtered out"),
            ("late_rows_dropped", "late event dropped", "late events dropped"),
        ):
            if int(record.get(key) or 0):
                parts.append(_count(int(record[key]), one, many))
        parts.append(_count(int(record["rows_written"]), "row written", "rows written"))
        if int(record.get("dead_letters") or 0):
            parts.append(_count(int(record["dead_letters"]), "dead letter"))
    except (ValueError, KeyError, TypeError):
        return None
    return f"{match.group(1)} " + ", ".join(parts)


def shown_lines(lines: list[LogLine], *, clearflow_lines: int) -> list[LogLine]:
    """The last `clearflow_lines` of ClearFlow's lines, with the Spark lines among and after them (the page hides
    those until asked): a stack trace does not push the job's own lines off the page."""
    kept = 0
    start = len(lines)
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].is_spark:
            kept += 1
            if kept > clearflow_lines:
                break
        start = i
    return lines[start:]
