"""A command in a real terminal (a pty): what a person at a shell sees, prompts answered as they appear, Ctrl-C."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class TerminalRun:
    output: str  # everything written to the terminal, escape sequences included
    returncode: int


def run_in_terminal(
    command: Sequence[str] | str,
    *,
    env: dict[str, str],
    cwd: str,
    answers: Sequence[tuple[str, str]] = (),
    interrupt_when: str | None = None,
    interrupt_after: float | None = None,
    timeout: float = 120.0,
) -> TerminalRun:
    """Run `command` (argv, or a shell line) on a pty. Each (prompt, answer) is typed once `prompt` has appeared, in
    order. Ctrl-C (SIGINT to its process group) is sent once `interrupt_when` has appeared and `interrupt_after`
    more seconds have passed (or after `interrupt_after` alone); otherwise it runs to its end."""
    leader, follower = pty.openpty()
    shell = isinstance(command, str)
    process = subprocess.Popen(
        ["bash", "-c", command] if shell else list(command),
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**env, "TERM": "xterm", "COLUMNS": "160", "LINES": "50"},
        cwd=cwd,
        start_new_session=True,
        close_fds=True,
        # As a terminal's shell starts a program: Ctrl-C interrupts it. A test run started in the background by a
        # shell without job control (`make test &`) inherits SIGINT ignored, and so would the command.
        preexec_fn=_interrupt_as_in_a_terminal,
    )
    os.close(follower)
    chunks: list[bytes] = []
    pending = list(answers)
    started = time.monotonic()
    seen_at: float | None = None if interrupt_when else started
    interrupted = False
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the command ended and the pty closed
                    data = b""
                if not data and process.poll() is not None:
                    break
                chunks.append(data)
            text = b"".join(chunks).decode(errors="replace")
            if pending and pending[0][0] in text:
                os.write(leader, (pending.pop(0)[1] + "\n").encode())
            if interrupt_when and seen_at is None and interrupt_when in text:
                seen_at = time.monotonic()
            due = interrupt_after is not None and seen_at is not None and time.monotonic() - seen_at >= interrupt_after
            if due and not interrupted:
                os.killpg(process.pid, signal.SIGINT)
                interrupted = True
            if process.poll() is not None and not ready:
                break
        else:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError(f"still running after {timeout} s:\n{b''.join(chunks).decode(errors='replace')}")
        returncode = process.wait(timeout=30)
    finally:
        os.close(leader)
    return TerminalRun(b"".join(chunks).decode(errors="replace"), returncode)


def _interrupt_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
