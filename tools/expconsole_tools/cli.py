"""The `expconsole` command: `serve` the API on this machine, and create, list or deactivate API keys.

Heavy imports (moto, boto3, the handlers) happen inside the commands, so `--help` stays quick.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from typing import Any, NoReturn

from expconsole_tools.local.command_backend import backend_context

DEFAULT_STACK_NAME = "expconsole"


def main(argv: list[str] | None = None) -> int:
    """Run a command; a reader that goes away (`expconsole import DIR | head -1`) ends it quietly
    with the status a Unix tool killed by SIGPIPE has, not a traceback."""
    try:
        try:
            status = _main(argv)
        finally:
            sys.stdout.flush()  # here, where a closed pipe can still be caught, not at exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 128 + signal.SIGPIPE
    return status


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help(sys.stderr)
        return 2
    if hasattr(args, "aws"):
        _check_backend_arguments(parser, args)
    from botocore.exceptions import BotoCoreError, ClientError

    from expconsole_tools.local.backend import LocalError
    from expconsole_tools.local.template import TemplateError

    try:
        return int(args.run(args))
    except (LocalError, TemplateError) as exc:
        print(f"expconsole {args.command}: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except (BotoCoreError, ClientError) as exc:
        print(f"expconsole {args.command}: AWS said: {exc}", file=sys.stderr)
        return 1


def _check_backend_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an option the chosen backend would ignore; default the stack name."""
    if args.aws:
        local_only = [name for name in ("data_dir", "ephemeral") if getattr(args, name, None)]
        if local_only:
            flags = " and ".join("--" + name.replace("_", "-") for name in local_only)
            parser.error(f"{flags}: local state only, not used with --aws")
        if args.stack_name and os.environ.get("TABLE_NAME") and os.environ.get("EVENTS_BUCKET"):
            parser.error(
                "--stack-name: TABLE_NAME and EVENTS_BUCKET are set and name the table and bucket "
                "instead of the stack's outputs; unset them, or drop --stack-name"
            )
        args.stack_name = args.stack_name or DEFAULT_STACK_NAME
    elif args.stack_name is not None:
        parser.error("--stack-name: names the stack used with --aws; add --aws")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="expconsole",
        description="Experimentation console: local server, API keys, import and convert events, pulse.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="serve the API of template.yaml on this machine",
        description="Serve the routes of template.yaml with the real handlers, on moto (default) or the "
        "account (--aws). Stop with Ctrl-C.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=3000, help="port, 0 for a free one (default: %(default)s)")
    serve.add_argument("--api-key", help="console key to register and accept (default: a new one)")
    serve.add_argument("--server-secret", help="server secret to register and accept (default: a new one)")
    serve.add_argument("--template", help="the SAM template (default: template.yaml here or in a parent)")
    serve.add_argument(
        "--build-dir",
        metavar="DIR",
        help="run the built stack (`make build`: .aws-sam/build) instead of the source tree: each function "
        "imported as Lambda does, from its code folder and its layers only, by the runtime's python3.12",
    )
    serve.add_argument("--quiet", action="store_true", help="no access log on stderr")
    serve.add_argument(
        "--max-concurrency",
        type=_positive_int,
        default=10,
        metavar="N",
        help="sandboxes (worker processes) per function, as Lambda runs concurrent requests; more "
        "concurrent requests wait for a free one (default: %(default)s)",
    )
    serve.add_argument(
        "--idle-seconds",
        type=_positive_float,
        default=120.0,
        metavar="S",
        help="stop a sandbox idle this long, as Lambda reclaims idle environments; the next request "
        "starts a new one (default: %(default)s)",
    )
    serve.add_argument(
        "--no-warm",
        dest="warm",
        action="store_false",
        help="start no sandbox before its first request (by default the server starts those the web "
        "console's first page and sign-in call, so that neither waits for a cold start)",
    )
    _backend_arguments(serve)
    serve.add_argument("--ephemeral", action="store_true", help="start empty and write nothing to disk")
    serve.set_defaults(run=_serve, command="serve")

    keys = commands.add_parser("keys", help="create or list API keys", description="Create or list API keys.")
    key_commands = keys.add_subparsers(title="key commands", metavar="COMMAND", required=True)
    create = key_commands.add_parser(
        "create",
        help="create a key and print it (once)",
        description="Create a key and print it on stdout; only its hash is stored.",
    )
    create.add_argument(
        "--kind", choices=["console", "server"], required=True, help="console key or server secret"
    )
    create.add_argument("--description", default="", help="what the key is for")
    _backend_arguments(create)
    create.set_defaults(run=_keys_create, command="keys create")
    listing = key_commands.add_parser("list", help="list keys (never their values)", description="List keys.")
    _backend_arguments(listing)
    listing.set_defaults(run=_keys_list, command="keys list")
    deactivate = key_commands.add_parser(
        "deactivate",
        help="deactivate a key by its id (see keys list)",
        description="Deactivate a key: it is refused from then on (a function's sandbox that looked it up "
        "keeps it for KeyCacheSeconds, 60 s by default, locally as in AWS).",
    )
    deactivate.add_argument("key_id", metavar="KEY_ID", help="the key's id, as `keys list` shows it")
    _backend_arguments(deactivate)
    deactivate.set_defaults(run=_keys_deactivate, command="keys deactivate")

    bulk = commands.add_parser(
        "import",
        help="import a tree of day directories of event files (Parquet, JSON lines, CSV)",
        description="Upload DIR/YYYY-MM-DD/<files> to imports/date=YYYY-MM-DD/ in the events bucket, where "
        "the import function validates every row and stores the accepted ones as ingestion would, "
        "writing _report.<file>.json and _rejected.<file>.jsonl beside each input. Prints the reports' "
        "totals. Re-running it stores nothing twice.",
    )
    bulk.add_argument(
        "dir", metavar="DIR", help="root of the day directories (DIR/2026-01-31/events.parquet)"
    )
    bulk.add_argument("--no-progress", action="store_true", help="no progress bar")
    bulk.add_argument(
        "--timeout",
        type=_positive_int,
        default=900,
        metavar="SECONDS",
        help="with --aws, how long to wait for the import function's reports (default: %(default)s)",
    )
    _backend_arguments(bulk)
    bulk.set_defaults(run=_import, command="import")

    convert = commands.add_parser(
        "convert",
        help="convert another analytics tool's export to the event model",
        description="Convert an Amplitude, Mixpanel or Segment export (a file or a directory of them) to "
        "events of this console's model. OUT ending in .jsonl is one JSON lines file; any other OUT is a "
        "directory of day directories (OUT/YYYY-MM-DD/<tool>.jsonl), ready for `expconsole import OUT`.",
    )
    convert.add_argument(
        "--from", dest="tool", choices=["amplitude", "mixpanel", "segment"], required=True, help="source tool"
    )
    convert.add_argument(
        "input", metavar="IN", help="the export: a file (.json, .jsonl, .gz, .zip) or directory"
    )
    convert.add_argument("output", metavar="OUT", help="a .jsonl file, or a directory of day directories")
    convert.set_defaults(run=_convert, command="convert")

    pulse = commands.add_parser(
        "pulse",
        help="load pulse: compute experiment and holdout results from the stored events",
        description="Run the pulse pipeline (what load_pulse and the hourly schedule run) in this process, "
        "against the local server's data (or the account with --aws): every running experiment and enabled "
        "holdout (then, as the schedule does, the finished days they read compacted to Parquet), or one "
        "experiment. Results appear in pulse_results.",
    )
    pulse.add_argument("--experiment", metavar="ID", help="only this experiment (default: everything due)")
    pulse.add_argument("--holdout", metavar="ID", help="only this holdout")
    pulse.add_argument(
        "--date",
        type=_date,
        metavar="YYYY-MM-DD",
        help="analyse up to the end of this UTC day instead of up to now",
    )
    pulse.add_argument(
        "--refresh",
        choices=["full", "incremental"],
        default="incremental",
        help="full recomputes every day from the events; incremental reuses unchanged days (default)",
    )
    pulse.add_argument("--no-progress", action="store_true", help="no progress bar")
    _backend_arguments(pulse)
    pulse.set_defaults(run=_pulse, command="pulse")
    return parser


def _date(text: str) -> str:
    import datetime as dt

    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _backend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--aws", action="store_true", help="use the deployed table and bucket instead of moto"
    )
    parser.add_argument(
        "--stack-name",
        help=f"with --aws, the stack whose outputs name the table and bucket (default: {DEFAULT_STACK_NAME})",
    )
    parser.add_argument("--data-dir", help="where local state lives (default: .expconsole)")


def _serve(args: argparse.Namespace) -> int:
    from expconsole_tools.local.server import LocalServer

    # A plain flag, polled: a handler that takes a lock (Event.set) can deadlock against the main
    # thread holding it, and a signal the kernel hands to another thread leaves a main thread
    # blocked in an untimed wait asleep (the handler only runs once it wakes).
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, _frame: stopping.append(signum))
    server = LocalServer(
        args.host,
        args.port,
        api_key=args.api_key,
        server_secret=args.server_secret,
        data_dir=args.data_dir,
        ephemeral=args.ephemeral,
        template=args.template,
        build_dir=args.build_dir,
        use_aws=args.aws,
        stack_name=args.stack_name,
        quiet=args.quiet,
        max_concurrency=args.max_concurrency,
        idle_seconds=args.idle_seconds,
        warm=args.warm,
    )
    try:
        server.start()
        print(server.banner(), flush=True)
        while not stopping:
            time.sleep(0.25)
    finally:
        server.stop()
    _exit_now(0)


def _exit_now(status: int) -> NoReturn:
    """End the process without the interpreter's teardown, once the server has stopped.

    stop() closed everything that matters (sandboxes reaped, journal closed, data dir released);
    tearing down moto and the libraries loaded with it only costs seconds of CPU, many more on a
    busy machine, during which a Ctrl-C seems not to have worked.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def _keys_create(args: argparse.Namespace) -> int:
    from expconsole.services import keys

    with backend_context(args) as where:
        plain, record = keys.create_key(args.kind, args.description)
    print(plain, flush=True)
    print(
        f"Created {args.kind} key {record['keyId']} in {where}. It is shown only now; send it in the "
        "SERVICE-API-KEY header.",
        file=sys.stderr,
    )
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    from expconsole.services import keys

    with backend_context(args):
        records = sorted(keys.list_keys(), key=lambda r: r.get("createdTime", 0))
    rows = [("KEY ID", "KIND", "CREATED (UTC)", "DESCRIPTION")] + [_key_row(r) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join([*(row[i].ljust(widths[i]) for i in range(3)), row[3]]).rstrip())
    return 0


def _keys_deactivate(args: argparse.Namespace) -> int:
    from expconsole.services import keys

    with backend_context(args) as where:
        found = keys.deactivate(args.key_id)
    if not found:
        print(f"No key with id {args.key_id!r} in {where} (see `expconsole keys list`).", file=sys.stderr)
        return 1
    print(f"Deactivated key {args.key_id} in {where}.", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    from expconsole_tools import importer

    return importer.run(args)


def _convert(args: argparse.Namespace) -> int:
    from expconsole_tools import convert

    return convert.run(args)


def _pulse(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from expconsole import kinds
    from expconsole.api.errors import status_of
    from expconsole.errors import DomainError
    from expconsole.services import pulse_loads
    from expconsole.services.pulse import run

    with backend_context(args) as where:
        if args.experiment or args.holdout:
            targets = [(kinds.EXPERIMENT, args.experiment)] if args.experiment else []
            targets += [(kinds.HOLDOUT, args.holdout)] if args.holdout else []
        else:
            targets = pulse_loads.due(int(time.time() * 1000), every_hour=True)
        scheduled = not (args.experiment or args.holdout)
        if not targets:
            print(f"Nothing to load in {where}: no running experiment or enabled holdout.", file=sys.stderr)
            return 0
        failures = 0
        for kind, entity_id in targets:
            bar = tqdm(
                total=1,
                desc=f"{kinds.LABEL[kind]} {entity_id}",
                unit="step",
                disable=args.no_progress,
                leave=False,
            )

            def progress(step: str, done: int, total: int, bar: Any = bar) -> None:
                bar.total = total
                bar.n = done
                bar.set_postfix_str(step, refresh=True)

            try:
                record = run.load_pulse(
                    kind,
                    entity_id,
                    refresh=args.refresh,
                    as_of=args.date,
                    creator="expconsole pulse",
                    progress=progress,
                )
            except DomainError as exc:
                bar.close()
                print(f"{kinds.LABEL[kind]} {entity_id}: {status_of(exc)} {exc}", file=sys.stderr)
                failures += 1
                continue
            bar.close()
            seconds = (record["finishedTime"] - record["createdTime"]) / 1000
            print(
                f"{kinds.LABEL[kind]} {entity_id}: {record['finishedState']}, {record['startDs']} to "
                f"{record['endDs']} in {seconds:.1f} s"
            )
        if scheduled:  # as the hourly schedule does: the finished days these loads read, compacted
            started = time.monotonic()
            days = pulse_loads.compaction_due(targets, int(time.time() * 1000))
            written = pulse_loads.compact({"days": days})["compacted"] if days else []
            if written:
                print(
                    f"Compacted {len(written)} day(s) to Parquet ({written[0]} to {written[-1]}) "
                    f"in {time.monotonic() - started:.1f} s"
                )
    return 1 if failures else 0


def _key_row(record: dict[str, Any]) -> tuple[str, str, str, str]:
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(record.get("createdTime", 0) / 1000))
    kind = str(record.get("kind", "")) + ("" if record.get("active", True) else " (inactive)")
    return str(record.get("keyId", "")), kind, created, str(record.get("description", ""))


if __name__ == "__main__":
    sys.exit(main())
