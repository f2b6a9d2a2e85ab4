"""A real ClickHouse HTTP server from chDB's embedded engine (ClickHouse 26.9), as its own process.

Run: python -m localstack.clickhouse_server --port 8123 --data-dir var/clickhouse

How it works (measured): the engine reads `config.xml` from the working directory,
`SYSTEM START LISTEN HTTP` starts ClickHouse's own HTTP handler, and the listener lives only while the
engine is inside a query, so the same call goes on into an endless one. `chdb._chdb.query` with the
TabSeparated format is a private entry point: chdb and chdb-core are pinned in pyproject.toml.
One process per data directory (the engine locks it).
"""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

CONFIG_XML = """<clickhouse>
    <http_port>{port}</http_port>
    <listen_host>{host}</listen_host>
    <logger><level>warning</level><console>1</console></logger>
</clickhouse>
"""


def serve(*, host: str, port: int, data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    run_dir = data_dir.parent / f".{data_dir.name}-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.xml").write_text(CONFIG_XML.format(host=host, port=port))
    os.chdir(run_dir)

    # The engine blocks inside C code; Python signal handlers would never run. Default actions end the
    # process at once, which is safe: every insert is durable when its HTTP request answers.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    from chdb import _chdb

    print(f"clickhouse: starting on http://{host}:{port}, data in {data_dir}", flush=True)
    # One call: a second entry into the engine re-initialises it and fails ("initialized twice").
    _chdb.query(
        "SYSTEM START LISTEN HTTP; SELECT sleepEachRow(1) FROM system.numbers SETTINGS max_block_size = 1",
        "TabSeparated",
        path=str(data_dir),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    serve(host=args.host, port=args.port, data_dir=args.data_dir)


if __name__ == "__main__":
    main()
