"""A job's log as the pipeline page shows it: ClearFlow's own lines apart from Spark's, which the page hides
until asked (Spark's start-up banner, its log4j lines and the JVM's stack traces under them).

- ClearFlow's: the job's logging (`2026-11-25 15:01:03,076 ERROR clearflow.run ...`, `spark_jobs.*` too), the
  wrapper's lines (`clearflow: job starting ...`), and any line of unknown origin (shown: it may matter);
- Spark's: log4j lines (`26/11/25 15:00:59 WARN Executor: ...`), the banner Spark and the JVM print at start,
  and the lines that continue a Spark line: indented (`\tat org.apache...`), an exception's name
  (`org.apache.spark.SparkException: ...`), `Caused by:`, a Python traceback inside a Spark error.
A line that continues one of ClearFlow's (a traceback after an ERROR) stays with it.
"""

from __future__ import annotations

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
_CONTINUATION = re.compile(r"^(\s|Caused by:|Traceback |\.\.\. \d+ more|[\w.$]+(Exception|Error)\b(:|$))")


@dataclass(frozen=True)
class LogLine:
    text: str
    source: Source

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
        out.append(LogLine(text, source))
        previous = source
    return out


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
