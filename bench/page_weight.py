"""What a page makes the browser download besides its HTML: the static files its templates link (base.html and the
page's own), raw and gzip-compressed, at one or more git revisions, so a change to frontend/ is seen in bytes.

    .venv/bin/python bench/page_weight.py 7bde00c HEAD

Reads the files from git (no server needed); the HTML itself and the htmx partials a page loads after are not
counted (measure those in a browser: performance.getEntriesByType("navigation"/"resource"))."""

from __future__ import annotations

import argparse
import gzip
import re
import subprocess

STATIC = re.compile(r"""\{%\s*static\s+['"]([^'"]+)['"]\s*%\}""")
BASE = "webapp/templates/base.html"
PAGES = {
    "pipeline list": "webapp/pipelines/templates/pipelines/pipeline_list.html",
    "pipeline page": "webapp/pipelines/templates/pipelines/pipeline_detail.html",
    "wizard, dedup step": "webapp/wizard/templates/wizard/steps/dedup.html",
}


def show(revision: str, path: str) -> bytes | None:
    done = subprocess.run(["git", "show", f"{revision}:{path}"], capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def linked(revision: str, template: str) -> list[str]:
    files: list[str] = []
    for path in (BASE, template):
        text = (show(revision, path) or b"").decode()
        files += [name for name in STATIC.findall(text) if name.endswith((".css", ".js"))]
    return list(dict.fromkeys(files))


def weight(revision: str, template: str) -> tuple[int, int]:
    raw = packed = 0
    for name in linked(revision, template):
        content = show(revision, f"frontend/{name}")
        if content is None:
            continue
        raw += len(content)
        packed += len(gzip.compress(content, compresslevel=9))
    return raw, packed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+")
    args = parser.parse_args()
    print(f"{'page':<20} {'revision':<10} {'files':>5} {'raw bytes':>10} {'gzip bytes':>10}")
    for page, template in PAGES.items():
        for revision in args.revisions:
            raw, packed = weight(revision, template)
            print(f"{page:<20} {revision:<10} {len(linked(revision, template)):>5} {raw:>10,} {packed:>10,}")


if __name__ == "__main__":
    main()
