"""JVM class-data sharing (AppCDS) for the job's driver: Spark's classes mapped from an archive, not parsed anew.

A job's JVM loads some 10,000 classes before its first batch; with an archive made once (`python -m
spark_jobs.cds_build`, run by `make install`) it maps them instead. Java 17 has no -XX:+AutoCreateSharedArchive (JDK
19+), so the archive is written by a short training run under -XX:ArchiveClassesAtExit, then used through
-XX:SharedArchiveFile. The JVM checks that the archive fits (same JDK, same class path prefix) and silently runs
without it when it does not (-Xshare:auto, the default): a stale or missing archive only costs the time it saves.
The archive's name carries the JDK and the pyspark version, so an upgrade makes a new one rather than a stale hit.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from spark_jobs.jars import jars_root

CDS_ENV = "CLEARFLOW_CDS"  # "0": never use or build the archive


def enabled() -> bool:
    return os.environ.get(CDS_ENV, "1") != "0"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


# Raised when `spark_jobs.cds_build`'s training run changes: the archive's name changes with it, so the next
# `make install` (whose stamp covers cds_build.py) makes the new one instead of keeping the old.
TRAINING_VERSION = 2


def archive_path() -> Path:
    import pyspark

    made_by = f"{_java()}|{pyspark.__version__}|{sys.prefix}|{TRAINING_VERSION}"
    key = hashlib.sha1(made_by.encode()).hexdigest()[:12]  # noqa: S324
    return jars_root().parent / "cds" / f"spark-driver-{key}.jsa"


# Where the archive is mapped. This JDK (17.0.15) relocates it by default (ArchiveRelocationMode=1, for address
# randomisation): every pointer in it is patched at start, so each job held its own dirty copy, about 134 MB of
# private memory per job (of a 160 MB archive), shared with no other job (measured with bench/footprint.py,
# docs/performance-log.md "A light job's footprint"). Mapped at the address it was made for (mode 0; the JVM still
# relocates when that address is taken), its read-only part stays clean file pages that every job of this install
# shares, and only the classes' runtime state is written. The cost: the archived classes' metadata sits at the
# same, predictable address in every job (no address randomisation for it).
MAP_AT_ITS_ADDRESS = "-XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0"


def java_options() -> str:
    """The driver's extra JVM options for the archive, or "" (none made yet, or turned off)."""
    if not enabled():
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} {MAP_AT_ITS_ADDRESS}" if path.is_file() else ""
