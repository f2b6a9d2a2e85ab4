"""bench/soak_series.py loaded for the tests (bench/ is a folder of scripts, not a package), and a typical minute."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "bench" / "soak_series.py"
_SPEC = importlib.util.spec_from_file_location("soak_series", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
soak_series = importlib.util.module_from_spec(_SPEC)
sys.modules["soak_series"] = soak_series  # dataclasses look their module up by name
_SPEC.loader.exec_module(soak_series)

MIB = 2**20


def sample(minute: int, **overrides: object):
    values = {
        "minute": minute,
        "produced": 1_200_000,
        "rows": 1_080_000 * minute,
        "expected_unique": 1_080_000 * minute,
        "latency_p50_ms": 700,
        "latency_p95_ms": 1_400,
        "rows_visible": 1_080_000,
        "batches": 60,
        "batch_p50_ms": 650.0,
        "batch_max_ms": 1_200.0,
        "lag": 12_000,
        "state_keys": 1_080_000 * minute,
        "state_memory_bytes": 0,
        "state_disk_bytes": 80 * MIB * minute,
        "heap_used_bytes": 700 * MIB,
        "rss_bytes": 2_000 * MIB,
        "jvm_rss_bytes": 1_500 * MIB,
        "restarts": 0,
        "histogram": {69: 540_000, 139: 540_000},  # 690-699 ms and 1390-1399 ms, half each
    }
    values.update(overrides)
    return soak_series.MinuteSample(**values)
