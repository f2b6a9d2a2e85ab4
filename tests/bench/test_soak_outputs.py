"""bench/soak.py's outputs: the summary, a CSV of the minutes and the plot. Not in the fast tier: matplotlib lists the
machine's fonts with `fc-list` the first time it draws."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.bench.soak_helpers import MIB, sample, soak_series


def test_the_outputs_are_a_summary_a_csv_of_the_minutes_and_a_png(tmp_path: Path):
    samples = [sample(m) for m in range(1, 4)]
    summary = soak_series.summarize(samples, soak_series.rows_verdict(rows=1, distinct_ids=1, unique_produced=1), {})
    paths = soak_series.write_outputs(tmp_path, samples, summary)
    assert [p.name for p in paths] == ["summary.json", "minutes.csv", "soak.png"]
    written = json.loads((tmp_path / "summary.json").read_text())
    # One minute in the last third: no trend to judge, so the targets are not met (not measured).
    assert written["checks"]["rss_flat_last_third"] is None and written["targets_met"] is False
    assert len(written["series"]) == 3
    assert written["series"][0]["histogram"] == {"69": 540_000, "139": 540_000}
    with open(tmp_path / "minutes.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["minute"] for r in rows] == ["1", "2", "3"] and rows[2]["rss_bytes"] == str(2_000 * MIB)
    assert (tmp_path / "soak.png").read_bytes().startswith(b"\x89PNG")
