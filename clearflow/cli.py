"""The `clearflow` command: pipelines as code against a ClearFlow server (docs/cli.md).

Every command is a method of `clearflow.Client`; this module parses arguments, prints results (text, or JSON with
`--output json`) and turns errors into words and exit codes (`clearflow.errors.ExitCode`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TextIO

from clearflow import render
from clearflow._version import __version__
from clearflow.client import Client
from clearflow.config import DEFAULT_URL, ENV_URL, Settings, normalize_url, remove_settings, save_settings
from clearflow.errors import (
    ApplyInterruptedError,
    ClearFlowError,
    ExitCode,
    NotConfiguredError,
    PipelineFailedError,
    ServerError,
    ServerUnreachableError,
)
from clearflow.models import Workspace


class Output:
    """Where results go: text for people, or JSON (one document, or one per line for --watch and --follow)."""

    def __init__(self, mode: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.json = mode == "json"
        self.out, self.err = out, err

    def result(self, text: str | Callable[[], str], data: Any) -> None:
        if self.json:
            self.out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        else:
            self.out.write((text() if callable(text) else text).rstrip("\n") + "\n")
        self.out.flush()

    def line(self, text: str, data: Any) -> None:
        self.out.write((json.dumps(data, ensure_ascii=False, default=str) if self.json else text) + "\n")
        self.out.flush()

    def error(self, exc: ClearFlowError) -> None:
        if self.json:
            self.out.write(json.dumps({"error": exc.to_dict()}, indent=2, ensure_ascii=False) + "\n")
        else:
            self.err.write(render.error_text(exc) + "\n")


# -- commands ----------------------------------------------------------------------------------------------------


def _login(args: argparse.Namespace, out: Output) -> int:
    interactive = sys.stdin.isatty()
    url = args.url
    if not url and interactive:
        url = input(f"ClearFlow URL [{DEFAULT_URL}]: ").strip() or DEFAULT_URL
    if not url:
        raise NotConfiguredError("give the server's address: clearflow login --url https://clearflow.example.com")
    if interactive:
        token = getpass.getpass("API token (the web app's API tokens page, /account/tokens/): ").strip()
    else:
        token = sys.stdin.readline().strip()  # e.g. `echo "$TOKEN" | clearflow login --url ...`
    if not token:
        raise NotConfiguredError("no token given: create one on the web app's API tokens page (/account/tokens/)")
    settings = Settings(normalize_url(url), token)
    with Client(settings.url, settings.token) as client:
        me = client.me()
        workspaces = client.workspaces()
    workspace = _login_workspace(args.workspace, workspaces, interactive=interactive)
    path = save_settings(settings)
    access = "read only" if me.token and me.token.read_only else "read and write"
    token_name = f"token {me.token.name!r}, " if me.token else ""
    where = f" in workspace {workspace.name!r} as {me.role}" if workspace is not None else ""
    text = f"Logged in to {settings.url} as {me.username}{where} ({token_name}{access}). Saved in {path}."
    if settings.url.startswith("http://") and not any(h in settings.url for h in ("//127.0.0.1", "//localhost")):
        text += "\nwarning: http:// sends the token unencrypted; use https:// unless the server is on this machine."
    out.result(text, {"url": settings.url, "username": me.username, "token": me.token and me.token.to_dict(),
                      "workspace": workspace and workspace.to_dict(), "role": me.role,
                      "config": str(path)})  # fmt: skip
    return ExitCode.OK


def _login_workspace(wanted: str | None, workspaces: list[Workspace], *, interactive: bool) -> Workspace | None:
    """The workspace the token acts in, checked against the one asked for (`--workspace`, or the answer to the
    prompt): a token belongs to one workspace, so another one takes another token."""
    if not workspaces:
        return None
    own = workspaces[0]
    if wanted is None and interactive:
        wanted = input(f"Workspace [{own.name}]: ").strip() or None
    if wanted is None or wanted in (own.name, str(own.id)):
        return own
    raise NotConfiguredError(
        f"this token acts in workspace {own.name!r} only, not {wanted!r}: create a token in {wanted!r} (its API "
        "tokens page, with that workspace chosen in the header) and log in with it"
    )


def _logout(args: argparse.Namespace, out: Output) -> int:
    path = remove_settings()
    out.result(f"Logged out: removed {path}." if path else "Not logged in.", {"removed": str(path) if path else None})
    return ExitCode.OK


def _apply(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        result = client.apply(
            *args.file,
            deploy=args.deploy,
            checkpoint=args.checkpoint,
            note=args.note,
            wait=args.wait,
            timeout=args.timeout,
        )
    out.result(lambda: render.apply_text(result), result.to_dict())
    return ExitCode.OK


def _diff(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        plan = client.diff(*args.file, deploy=args.deploy, checkpoint=args.checkpoint)
    out.result(lambda: render.plan_text(plan), {**plan.to_dict(), "changed": plan.changed})
    return ExitCode.OK


def _export(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        documents = client.export(args.name, connections=not args.no_connections)
    from clearflow.export import to_yaml

    out.result(lambda: to_yaml(documents), documents)
    return ExitCode.OK


def _get(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        if args.what == "connections":
            connections = client.connections()
            out.result(lambda: render.connections_text(connections), [c.to_dict() for c in connections])
            return ExitCode.OK
        pipelines = client.pipelines()
        names = {(c.kind, c.id): c.name for c in client.connections()} if pipelines and not out.json else {}
    out.result(lambda: render.pipelines_text(pipelines, names), [p.to_dict() for p in pipelines])
    return ExitCode.OK


def _watch(out: Output, interval: float, show: Callable[[], tuple[list[str], Any]]) -> int:
    """Show the block every `interval` seconds, in place on a terminal (one JSON line each time with --output json),
    until Ctrl-C. A server that does not answer for a while is shown, not fatal."""
    in_place = out.out.isatty() and not out.json
    shown = 0
    try:
        while True:
            try:
                lines, data = show()
            except (ServerUnreachableError, ServerError) as exc:
                lines, data = [f"error: {exc.message} (retrying)"], {"error": exc.to_dict()}
            if out.json:
                out.line("", data)
            else:
                width = shutil.get_terminal_size().columns if in_place else 0
                block = [f"Every {interval:g} s, at {datetime.now():%H:%M:%S}. Ctrl-C stops.", *lines]
                if width:
                    block = [line[:width] for line in block]  # a wrapped line would break the redraw
                if in_place and shown:
                    out.out.write(f"\x1b[{shown}F\x1b[J")  # back to the block's first line, clear to the end
                out.out.write("\n".join(block) + ("\n" if in_place else "\n\n"))
                out.out.flush()
                shown = len(block)
            time.sleep(interval)
    except KeyboardInterrupt:
        return ExitCode.OK


def _status(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:

        def show() -> tuple[list[str], Any]:
            status = client.status(args.name)
            return render.status_lines(status), status.to_dict()

        if args.watch:
            return _watch(out, args.interval, show)
        lines, data = show()
    out.result("\n".join(lines), data)
    return ExitCode.OK


def _action(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        if args.command == "deploy":
            status = client.deploy(args.name, checkpoint=args.checkpoint, wait=args.wait, timeout=args.timeout)
        elif args.command == "rollback":
            status = client.rollback(
                args.name, args.to, checkpoint=args.checkpoint, wait=args.wait, timeout=args.timeout
            )
        elif args.command == "stop":
            status = client.stop(args.name, wait=args.wait, timeout=args.timeout)
        else:
            client.delete(args.name, remove_checkpoint=args.remove_checkpoint)
            kept = "" if args.remove_checkpoint else " (its checkpoint is kept; rows in ClickHouse stay)"
            out.result(f"pipeline {args.name!r}: deleted{kept}.", {"name": args.name, "deleted": True})
            return ExitCode.OK
    text = f"pipeline {args.name!r}: {render.status_word(status.status)}"
    text += f". {status.status_message}" if status.status_message else "."
    out.result(text, status.to_dict())
    return ExitCode.OK


def _logs(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        if not args.follow:
            lines = client.logs(args.name, lines=args.lines)
            out.result("\n".join(lines) if lines else "(no log yet)", {"lines": lines})
            return ExitCode.OK
        try:
            for line in client.follow_logs(args.name, lines=args.lines, interval=args.interval):
                out.line(line, {"line": line})
        except KeyboardInterrupt:
            return ExitCode.OK
    return ExitCode.OK  # pragma: no cover - following ends with Ctrl-C


def _dlq(args: argparse.Namespace, out: Output) -> int:
    with Client() as client:
        if args.dlq_command == "list":
            page = client.dead_letters(args.name, page=args.page, page_size=args.page_size)
            out.result(lambda: render.dead_letters_text(page), page.to_dict())
            return ExitCode.OK
        result = client.replay_dead_letters(args.name, limit=args.limit)
    out.result(lambda: render.replay_text(result), result.to_dict())
    return ExitCode.REFUSED if result.error or result.failed else ExitCode.OK


# -- arguments ---------------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "-o", "--output", choices=("text", "json"), default=argparse.SUPPRESS, help="text (default) or json"
    )
    parser = argparse.ArgumentParser(
        prog="clearflow",
        description="Pipelines as code for ClearFlow: apply YAML/JSON pipeline files, watch and run pipelines.",
        epilog=f"Server and token: {ENV_URL} and CLEARFLOW_TOKEN, or `clearflow login`. Docs: docs/cli.md.",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="text (default) or json")
    parser.add_argument("--version", action="version", version=f"clearflow {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[..., int], help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[output], help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    login = command("login", _login, "Check an API token with the server and store it (mode 0600) for later commands.")
    login.add_argument("--url", help=f"the web app's address (asked when left out; default {DEFAULT_URL})")
    login.add_argument(
        "--workspace", help="the workspace (name or id) the token must act in (asked when left out, in a terminal)"
    )
    command("logout", _logout, "Forget the stored server and token.")

    def files(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "-f", "--file", action="append", required=True, metavar="PATH",
            help="a YAML or JSON file, a directory of them, or - for standard input; repeatable",
        )  # fmt: skip
        sub.add_argument(
            "--deploy", action="store_true", help="also deploy the pipelines that do not run their current version"
        )
        sub.add_argument(
            "--checkpoint", choices=("keep", "fresh"),
            help="when a new version cannot continue from the checkpoint: keep it anyway, or start fresh",
        )  # fmt: skip

    apply = command("apply", _apply, "Create or update what the files describe; unchanged documents are left alone.")
    files(apply)
    apply.add_argument("--wait", action="store_true", help="with --deploy: wait until the pipelines run")
    apply.add_argument("--timeout", type=float, default=300.0, help="seconds --wait waits (default 300)")
    apply.add_argument("--note", default="clearflow apply", help="the note of the versions it makes")
    files(command("diff", _diff, "Show what apply would change, without changing anything."))

    export = command("export", _export, "Print a pipeline and its connections as YAML (secrets as ${ENV_VAR}).")
    export.add_argument("name")
    export.add_argument("--no-connections", action="store_true", help="only the pipeline document")

    get = command("get", _get, "List pipelines or connections.")
    get.add_argument("what", choices=("pipelines", "connections"))

    status = command("status", _status, "A pipeline's status, rows/s, lag, duplicates dropped and dead letters.")
    status.add_argument("name")
    status.add_argument("--watch", "-w", action="store_true", help="refresh in place until Ctrl-C")
    status.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (default 2)")

    for name, help_text in (
        ("deploy", "Run the pipeline's current version (a running pipeline is redeployed)."),
        ("rollback", "Deploy an earlier version again (--to N): a new version equal to N, deployed."),
        ("stop", "Stop the pipeline gracefully."),
        ("delete", "Delete the pipeline and its versions; rows in ClickHouse stay."),
    ):
        sub = command(name, _action, help_text)
        sub.add_argument("name")
        if name == "rollback":
            sub.add_argument("--to", type=int, required=True, metavar="N", help="the version to deploy again")
        if name in ("deploy", "rollback"):
            sub.add_argument("--checkpoint", choices=("keep", "fresh"), help="as for apply")
        if name in ("deploy", "rollback", "stop"):
            sub.add_argument("--wait", action="store_true", help="wait until it runs (deploy) or has stopped (stop)")
            sub.add_argument("--timeout", type=float, default=300.0, help="seconds --wait waits (default 300)")
        if name == "delete":
            sub.add_argument("--remove-checkpoint", action="store_true", help="also remove its checkpoint")

    logs = command("logs", _logs, "The last lines of the pipeline's job log.")
    logs.add_argument("name")
    logs.add_argument("--lines", "-n", type=int, default=100, help="how many lines (at most 200; default 100)")
    logs.add_argument("--follow", "-F", action="store_true", help="keep printing new lines until Ctrl-C")
    logs.add_argument("--interval", type=float, default=1.0, help="seconds between checks with --follow")

    dlq = command("dlq", _dlq, "A pipeline's dead letters: list them, or replay them to their topic.")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True, metavar="list|replay")
    dlq_list = dlq_commands.add_parser("list", parents=[output], help="list dead letters, newest first")
    dlq_list.add_argument("name")
    dlq_list.add_argument("--page", type=int, default=1)
    dlq_list.add_argument("--page-size", type=int, default=50)
    replay = dlq_commands.add_parser("replay", parents=[output], help="send dead letters back to their topic")
    replay.add_argument("name")
    replay.add_argument("--limit", type=int, help="at most this many (oldest first)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Output(args.output)
    try:
        return int(args.run(args, out))
    except (ApplyInterruptedError, PipelineFailedError) as exc:  # the server did (part of) what was asked
        out.error(exc)
        return int(exc.exit_code)
    except ClearFlowError as exc:
        if args.command == "apply" and "nothing was applied" not in exc.message.lower():
            exc.message += " Nothing was applied."
        out.error(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The console script's entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
