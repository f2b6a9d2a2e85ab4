"""A real ClickHouse HTTP server from chDB's embedded engine (ClickHouse 26.9), as its own process.

Run: python -m localstack.clickhouse_server --port 8123 --data-dir var/clickhouse

How it works (measured): the engine reads `config.xml` from the working directory,
`SYSTEM START LISTEN HTTP` starts ClickHouse's own HTTP handler, and the listener lives only while the
engine is inside a query, so the same call goes on into an endless one. `chdb._chdb.query` with the
TabSeparated format is a private entry point: chdb and chdb-core are pinned in pyproject.toml.
One process per data directory (the engine locks it).

The engine module is loaded by itself (`_load_engine`), not through `import chdb`: the package's `__init__` runs a
probe query that shuts the engine's table registry down for the rest of the process, after which
`CREATE TABLE ... ENGINE = Kafka` fails with "Shutdown was called" (bench/peers.py uses that engine).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.machinery
import importlib.util
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

# Background merges of parts run this many nice levels below the server's inserts and queries (ClickHouse's
# `os_threads_nice_value_merge_mutate`, an absolute value, so it is computed from the server's own): on one
# machine with the pipelines' jobs, a merge took a share of the cores in the very seconds the jobs' micro-batches
# needed them. Merges still get the idle cores and their share when there are none, so parts do not pile up.
MERGE_NICE_INCREMENT = 10

CONFIG_XML = """<clickhouse>
    <http_port>{port}</http_port>
    <listen_host>{host}</listen_host>
    <logger><level>warning</level><console>1</console></logger>
    <os_threads_nice_value_merge_mutate>{merge_nice}</os_threads_nice_value_merge_mutate>
</clickhouse>
"""


def _load_engine() -> ModuleType:
    """chDB's `_chdb` extension without the `chdb` package's import-time probe query. The package preloads the
    library with RTLD_DEEPBIND (its allocator must win over another libstdc++'s); so does this."""
    spec = importlib.util.find_spec("chdb")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("chdb is not installed (pip install -e '.[local]')")
    library = str(Path(next(iter(spec.submodule_search_locations))) / "_chdb.abi3.so")
    ctypes.CDLL(library, mode=sys.getdlopenflags() | os.RTLD_DEEPBIND)
    loader = importlib.machinery.ExtensionFileLoader("_chdb", library)
    module_spec = importlib.util.spec_from_file_location("_chdb", library, loader=loader)
    assert module_spec is not None
    module = importlib.util.module_from_spec(module_spec)
    loader.exec_module(module)
    return module


def serve(*, host: str, port: int, data_dir: Path) -> None:
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    run_dir = data_dir.parent / f".{data_dir.name}-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    merge_nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + MERGE_NICE_INCREMENT)
    (run_dir / "config.xml").write_text(CONFIG_XML.format(host=host, port=port, merge_nice=merge_nice))
    os.chdir(run_dir)

    # The engine blocks inside C code; Python signal handlers would never run. Default actions end the
    # process at once, which is safe: every insert is durable when its HTTP request answers.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    _chdb = _load_engine()

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
