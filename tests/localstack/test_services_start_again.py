"""A service of `make up` that exits (killed, crashed) is started again on the same definition, with the time it
took said, up to MAX_RESTARTS times; then it is left down and its log named. A plain `sleep` as the service."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from localstack import processes, up


def test_a_killed_service_is_started_again_then_left_down_after_too_many(tmp_path: Path, capsys, monkeypatch) -> None:
    group = processes.ProcessGroup(tmp_path / "logs")
    definition = processes.ServiceDef(name="worker", argv=[sys.executable, "-c", "import time; time.sleep(600)"],
                                      ready=lambda: True)  # fmt: skip
    first = group.start(definition)
    recorded = []
    restarts: dict[str, int] = {}
    try:
        os.killpg(first.process.pid, signal.SIGKILL)
        first.process.wait(10)
        [exited] = group.exited()
        up._start_again(group, exited, restarts, record=recorded.append)
        [again] = group.services
        assert again.process.pid != first.process.pid and again.process.poll() is None
        assert recorded == [again]  # the stack's record names the new pid
        said = capsys.readouterr().out
        assert "worker exited with code -9; starting it again (1 of 5)" in said
        assert "worker is up again after" in said

        monkeypatch.setattr(up, "MAX_RESTARTS", 1)
        os.killpg(again.process.pid, signal.SIGKILL)
        again.process.wait(10)
        up._start_again(group, group.exited()[0], restarts, record=recorded.append)
        assert group.services == []
        assert "not started again after 1 restarts" in capsys.readouterr().out
    finally:
        group.stop_all()
