"""Links between the docs lead somewhere: every relative link to a Markdown file names a file that exists and, with
`#anchor`, a heading of that file (anchors made as GitHub makes them). A fast check over docs/ and the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]*?\.md)?(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {anchor(heading) for heading in HEADING.findall(text)}


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_anchor_is_githubs():
    assert anchor("2026-11-29, main 6fa9290: 75 minutes at 20,000 events/s") == (
        "2026-11-29-main-6fa9290-75-minutes-at-20000-eventss"
    )
    assert anchor("Many pipelines (`bench/density.py`)") == "many-pipelines-benchdensitypy"


def test_every_link_between_the_docs_leads_to_a_file_and_a_heading():
    broken = []
    for path in markdown_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for target, fragment in LINK.findall(line):
                if not target and not fragment:
                    continue
                linked = (path.parent / target).resolve() if target else path
                if not linked.exists():
                    broken.append(f"{path.relative_to(ROOT)}:{number}: no file {target}")
                elif fragment and fragment not in anchors(linked):
                    broken.append(f"{path.relative_to(ROOT)}:{number}: no heading #{fragment} in {target or path.name}")
    assert broken == []
