"""The state a checkpoint already holds, which the worker sizes a restarted job for (worker.job_sizing)."""

from __future__ import annotations

import pytest

from worker.job_sizing import stored_state_bytes

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_the_state_a_checkpoint_holds_is_counted_from_its_files(tmp_path):
    assert stored_state_bytes(str(tmp_path)) is None  # no state yet
    (tmp_path / "state" / "0" / "0").mkdir(parents=True)
    (tmp_path / "state" / "0" / "0" / "1.changelog").write_bytes(b"x" * 1000)
    (tmp_path / "state" / "0" / "0" / "1.zip").write_bytes(b"x" * 500)
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "1").write_bytes(b"x" * 99)  # not state
    assert stored_state_bytes(str(tmp_path)) == 1500
    assert stored_state_bytes("s3a://bucket/checkpoints/p") is None
