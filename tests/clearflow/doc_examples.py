"""Run the examples of a markdown page as written, in order, in one directory (docs/cli.md says the rules):

- a ```yaml block whose first line is `# PATH` is a file: written to PATH;
- each line of a ```sh block is a command run by bash (`# exits N`: its expected exit code, else 0);
- a ```python block runs with this virtualenv's Python;
- a ```text (or ```json) block right after a sh or python block is the output of its last command, compared with
  numbers masked and runs of spaces collapsed, unless the line before it is `<!-- output varies -->`;
- `--watch` / `--follow` commands and `clearflow login` run in a terminal (tests.clearflow.terminal).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.clearflow.terminal import run_in_terminal

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\s*$")
_NUMBER = re.compile(r"\d+(?:[.,:\-]\d+)*")
VARIES = "<!-- output varies -->"


@dataclass
class Block:
    kind: str  # "file", "sh", "python", "output"
    text: str
    line: int  # where it starts in the page, for messages
    path: str = ""  # files
    checked: bool = True  # outputs


def blocks(markdown: str) -> list[Block]:
    found = []
    for match in _FENCE.finditer(markdown):
        language, body = match.group(1), match.group(2)
        line = markdown.count("\n", 0, match.start()) + 1
        before = markdown[: match.start()].rstrip().splitlines()[-1:] or [""]
        if language in ("yaml", "json") and body.startswith("# "):
            path, _, content = body.partition("\n")
            found.append(Block("file", content, line, path=path[2:].strip()))
        elif language == "sh":
            found.append(Block("sh", body, line))
        elif language == "python":
            found.append(Block("python", body, line))
        elif language in ("text", "json") and found and found[-1].kind in ("sh", "python"):
            found.append(Block("output", body, line, checked=before[0].strip() != VARIES))
    return found


def masked(text: str) -> list[str]:
    lines = [" ".join(_NUMBER.sub("N", line).split()) for line in text.strip("\n").splitlines()]
    return [line for line in lines if line]


def commands(sh: str) -> list[tuple[str, int]]:
    """(command, expected exit code) of each line; `\\` continues a line."""
    out, pending = [], ""
    for raw in sh.splitlines():
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        exits = _EXITS.search(line)
        out.append((_EXITS.sub("", line).strip(), int(exits.group(1)) if exits else 0))
    return out


@dataclass
class DocRun:
    """Runs a page's blocks in `cwd` with `env`. `before[command]` runs before that command (to wait for what a
    reader would wait for, e.g. the job's first batches); `terminal_answers` answer prompts (`clearflow login`)."""

    cwd: Path
    env: dict[str, str]
    before: dict[str, Callable[[], object]] = field(default_factory=dict)
    terminal_answers: list[tuple[str, str]] = field(default_factory=list)
    transcript: list[tuple[str, str]] = field(default_factory=list)  # (command, output), for the test's own checks

    def run(self, markdown: str, *, source: str) -> None:
        last_output = ""
        for block in blocks(markdown):
            where = f"{source}:{block.line}"
            if block.kind == "file":
                path = self.cwd / block.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text)
            elif block.kind == "sh":
                for command, expected in commands(block.text):
                    last_output = self._command(command, expected, where)
            elif block.kind == "python":
                result = subprocess.run(
                    [sys.executable, "-c", block.text],
                    cwd=self.cwd,
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert result.returncode == 0, f"{where}: the python example failed:\n{result.stdout}{result.stderr}"
                last_output = result.stdout
                self.transcript.append(("python", last_output))
            elif block.kind == "output" and block.checked:
                assert masked(last_output) == masked(block.text), (
                    f"{where}: the output differs from the page.\n--- page:\n{block.text}\n--- actual:\n{last_output}"
                )

    def _command(self, command: str, expected: int, where: str) -> str:
        if command in self.before:
            self.before[command]()
        if command == "clearflow login":
            run = run_in_terminal(command, env=self.env, cwd=str(self.cwd), answers=self.terminal_answers)
            output, code = run.output, run.returncode
        elif "--watch" in command or "--follow" in command:
            run = run_in_terminal(command, env=self.env, cwd=str(self.cwd), interrupt_after=4.0)
            output, code = run.output, run.returncode
        else:
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=600,
            )
            output, code = result.stdout, result.returncode
        assert code == expected, f"{where}: `{command}` exited {code}, expected {expected}:\n{output}"
        self.transcript.append((command, output))
        return output
