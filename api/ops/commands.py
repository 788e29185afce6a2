"""The service commands of ``kalah``: ``analyse``, ``best-move``, ``analyse-game``, ``batch``,
``serve``, ``worker`` and ``keys``.

:mod:`kalah_core.cli` never imports this package by name: it finds each command through the
``kalah.commands`` entry points (``pyproject.toml``), each naming one ``add_<command>``
function here that adds the subcommand to the parser. Loading this module is cheap (the
service's own modules load when a command runs) but checks that the ``server`` extra is
installed; without it the import fails with one line saying what to install, which ``kalah``
prints when such a command is run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

from kalah_core.cli import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    POSITION_HELP,
    Commands,
    add_command,
    emit,
    position_from_arg,
    rules_from_args,
)
from kalah_core.errors import KalahError
from kalah_core.position import Position

if TYPE_CHECKING:
    from ..core.reply import Answer
    from ..core.request import AnalysisRequest


def _missing_server_requirements() -> list[str]:
    """The distributions of the ``server`` extra that are not installed."""
    try:
        requirements = metadata.requires("kalah-core") or []
    except metadata.PackageNotFoundError:  # running from a source tree: nothing to check
        return []
    missing = []
    for requirement in requirements:
        if re.search(r"""extra\s*==\s*["']server["']""", requirement):
            name = re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]
            try:
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                missing.append(name)
    return missing


_MISSING = _missing_server_requirements()
if _MISSING:
    raise ImportError(
        "a service command: install the server extra, pip install 'kalah-core[server]' "
        f"(missing {', '.join(_MISSING)})"
    )


# --------------------------------------------------------------------- analysis


def _analysis_request(args: argparse.Namespace, *, live: bool = False) -> AnalysisRequest:
    """The request of an analysis command, its limits checked against the server
    configuration (a live one's against the stream's longest budget)."""
    from ..core.live import stream_settings
    from ..core.problems import ApiProblem
    from ..core.request import AnalysisRequest
    from .backends import default_analyser

    # A one-shot command uses the databases there are; it starts no background build.
    os.environ.setdefault("KALAH_EGDB_SEEDS", "0")
    rules = rules_from_args(args)
    position = position_from_arg(args.position, rules)
    settings = default_analyser().settings
    if live:
        settings = stream_settings(settings)
    limits = {"time_ms": args.time_ms, "depth": args.depth}
    try:
        return AnalysisRequest.of(settings, position, rules, limits)
    except ApiProblem as problem:
        raise KalahError(problem.detail) from None


def _analysis_answer(args: argparse.Namespace) -> tuple[Position, Answer]:
    """The API's own analysis code path (limits checked against the server configuration)."""
    from ..core.problems import ApiProblem
    from .backends import default_analyser

    request = _analysis_request(args)
    try:
        answer = default_analyser().analyse(request)
    except ApiProblem as problem:
        raise KalahError(problem.detail) from None
    return request.position, answer


def _source(answer: dict[str, Any], position: Position) -> str:
    """Where an answer came from: the cache, the opening book, the deep book, an endgame
    database (an exact answer of a position the database attached for its rules covers),
    or a search."""
    from kalah_core.rules import Rules

    from .backends import default_analyser

    book = answer.get("book")
    if answer.get("cached"):
        return "cache"
    if book is not None:
        return "deep book" if book.get("kind") == "deep" else "book"
    databases = default_analyser().databases()
    seeds = sum(position.south) + sum(position.north)
    if answer["exact"] and seeds <= databases.max_seeds(Rules.from_json(answer["rules"])):
        return "database"
    return "search"


def _bounds(item: dict[str, Any]) -> str:
    return f"[{item['lower']:+d}, {item['upper']:+d}]"


def _analysis_text(position: Position, answer: dict[str, Any], source: str | None) -> str:
    """The text of an answer (``source`` given) or of a live event: the value with its bounds,
    depth and origin, every move's value and bounds, the line."""
    kind = "exact" if answer["exact"] else "heuristic"
    depth = "proven" if answer["exact"] else f"depth {answer['depth']}"
    head = (
        f"{position.to_move.value.capitalize()} to move in {position.compact()}: value "
        f"{answer['value']:+d} ({kind}), bounds {_bounds(answer)}, {depth}"
    )
    if source is not None:
        head += f", source: {source}"
    else:  # a live event: where its estimates come from and the deepening underway
        if answer.get("source") == "deep book":
            head += ", from the deep book"
        head += f", {answer['nodes']:,} nodes, {answer['time_ms'] / 1000:.1f} s"
        searching = answer.get("searching")
        if searching is not None:
            done, moves = searching["moves"], len(answer["moves"])
            head += f", searching depth {searching['depth']} ({done} of {moves} moves)"
    return "\n".join(
        [
            head,
            *(
                f"  {m['move']!s:>4}  {m['value']:+4d}  {_bounds(m):>11}  "
                + ("exact" if m["exact"] else "estimate")
                for m in answer["moves"]
            ),
            "pv: " + "  ".join("".join(str(x) for x in turn) for turn in answer["pv"]),
        ]
    )


def cmd_analyse(args: argparse.Namespace) -> int:
    """Analyse a position as ``POST /v1/analysis`` does (``--watch``: as it deepens, as a
    live ``/v1/analysis`` streams it)."""
    if args.watch:
        return _watch(args)
    position, analysis = _analysis_answer(args)
    answer = analysis.json()
    emit(args, _analysis_text(position, answer, _source(answer, position)), answer)
    return EXIT_OK


def _watch(args: argparse.Namespace) -> int:
    """``kalah analyse --watch``: each event of the live analysis, as one block redrawn in
    place on a terminal (one block after another elsewhere), or as NDJSON under ``--json``;
    the answer last. Ctrl-C stops the search (the block shows what it had)."""
    from ..core.live import Live
    from .backends import default_analyser

    request = _analysis_request(args, live=True)
    live = Live(default_analyser(), request, alive=lambda: True, heartbeat_s=math.inf)
    live.start(lambda budget_ms: lambda spent_ms: None)  # nothing is charged on the terminal
    terminal = sys.stdout.isatty() and not args.json
    columns = shutil.get_terminal_size().columns
    shown = 0  # rows of the block on the terminal (a line longer than the terminal wraps)
    for event in live.events():
        if event is None:
            continue
        if args.json:
            print(event.decode(), flush=True)
            continue
        data = json.loads(event)
        if data["final"]:
            answer = data.get("answer")
            if answer is None:
                raise KalahError(data["problem"]["detail"])
            text = _analysis_text(request.position, answer, _source(answer, request.position))
        else:
            text = _analysis_text(request.position, data, None)
        if terminal and shown:
            sys.stdout.write(f"\x1b[{shown}F\x1b[J")  # up to the block's start, clear below
        elif shown:
            print()
        print(text, flush=True)
        shown = sum(max(1, -(-len(line) // columns)) for line in text.split("\n"))
    return EXIT_OK


def cmd_best_move(args: argparse.Namespace) -> int:
    """The best move and its value, as ``GET /v1/best-move`` gives them."""
    _, full = _analysis_answer(args)
    answer = full.best_move().json()
    label = "exact" if answer["exact"] else "heuristic"
    emit(args, f"{answer['best_move']} ({answer['value']:+d}, {label})", answer)
    return EXIT_OK


def _add_analysis_command(
    commands: Commands, name: str, func: Callable[[argparse.Namespace], int], text: str
) -> argparse.ArgumentParser:
    sub = add_command(commands, name, func, text)
    sub.add_argument("position", metavar="POSITION", help=POSITION_HELP)
    sub.add_argument("--time-ms", type=int, default=None, metavar="MS", help="time budget")
    sub.add_argument("--depth", type=int, default=None, metavar="D", help="heuristic depth")
    return sub


def add_analyse(commands: Commands) -> None:
    text = "analyse a position as the API does (limits from KALAH_*)"
    sub = _add_analysis_command(commands, "analyse", cmd_analyse, text)
    sub.add_argument(
        "--watch",
        action="store_true",
        help="show the analysis as it deepens (one block redrawn on a terminal; NDJSON "
        "events with --json, the answer last), up to KALAH_STREAM_MAX_TIME_MS",
    )


def add_best_move(commands: Commands) -> None:
    text = "the best move and its value, as the API gives it"
    _add_analysis_command(commands, "best-move", cmd_best_move, text)


# --------------------------------------------------------------------- game review


def cmd_analyse_game(args: argparse.Namespace) -> int:
    """Judge every sowing of a game as ``POST /v1/games/analysis`` does."""
    from kalah_core.review import JUDGEMENT_DOC, count_text

    from ..core.game_review import review_game
    from ..core.problems import ApiProblem
    from .backends import default_analyser

    os.environ.setdefault("KALAH_EGDB_SEEDS", "0")  # the databases there are, no build
    rules = rules_from_args(args)
    start = position_from_arg(args.start, rules)
    try:
        review = review_game(
            default_analyser(),
            rules.to_json(),
            start.to_json(),
            game=args.game,
            time_ms=args.time_ms,
        )
    except ApiProblem as problem:
        raise KalahError(problem.detail) from None
    data = review.to_json()
    rows = [
        f"{e['index'] + 1:>3}  {e['mover']:<5}  {e['move']!s:>4}  {e['value_before']:+4d} "
        f"{e['value_after']:+4d}  {e['loss']:>4}{'' if e['exact'] else '~'}  "
        f"{e['judgement']:<10}  {','.join(str(m) for m in e['best_moves'])}"
        for e in data["moves"]
    ]
    summary = [
        f"{side}: {s['sowings']} sowings, average loss {s['average_loss']:.2f}, "
        + ", ".join(count_text(n, name) for name, n in s["judgements"].items())
        + ("" if s["exact"] else " (estimated)")
        for side, s in data["summary"].items()
    ]
    text = "\n".join(
        [
            data["annotated"],
            "",
            "  #  mover  move  before after  loss  judgement   best",
            *rows,
            "",
            *summary,
            ("every loss exact" if data["exact"] else "~: estimated (the budget ran out)")
            + f"; {JUDGEMENT_DOC}",
        ]
    )
    emit(args, text, data)
    return EXIT_OK


def add_analyse_game(commands: Commands) -> None:
    review = add_command(
        commands,
        "analyse-game",
        cmd_analyse_game,
        "judge every sowing of a game in the Finnish notation against perfect play",
    )
    review.add_argument(
        "game", metavar="GAME", help="the game, e.g. '45-46, 1*-5'; '--' before one starting '-'"
    )
    review.add_argument(
        "--from", dest="start", metavar="POSITION", default=None, help="start position"
    )
    review.add_argument(
        "--time-ms",
        type=int,
        default=None,
        metavar="MS",
        help="search budget for the whole game (default 1000 per sowing, at most "
        "KALAH_MAX_TIME_MS)",
    )


# --------------------------------------------------------------------- batches


def cmd_batch(args: argparse.Namespace) -> int:
    """Analyse every position of a JSONL or CSV file, locally on every core or on a server."""
    import time

    from tqdm import tqdm

    from ..core.problems import ApiProblem
    from ..jobs.local import Interrupted, parse_local, read_items, run_local, write_jsonl
    from ..jobs.remote import run_remote
    from .backends import default_analyser

    os.environ.setdefault("KALAH_EGDB_SEEDS", "0")  # the databases there are, no build
    rules = rules_from_args(args).to_json()
    limits = {
        name: getattr(args, name)
        for name in ("time_ms", "depth", "nodes")
        if getattr(args, name) is not None
    }
    items = read_items(args.input)
    interrupted: Interrupted | None = None
    started = time.perf_counter()
    try:
        if args.server:
            with tqdm(total=len(items), unit="pos", disable=args.quiet) as bar:
                lines = run_remote(
                    args.server, items, rules, limits, key=args.key, progress=bar.update
                )
            distinct = None
        else:
            batch = parse_local(items, rules, limits)
            distinct = len(batch.tasks)
            with tqdm(total=len(batch.tasks), unit="pos", disable=args.quiet) as bar:
                try:
                    lines = run_local(batch, args.workers, default_analyser, progress=bar.update)
                except Interrupted as stopped:  # Ctrl-C: what is finished is still written
                    lines, interrupted = stopped.lines, stopped
    except ApiProblem as problem:
        raise KalahError(f"{problem.field}: {problem.detail}") from None
    seconds = time.perf_counter() - started
    if args.output == "-":
        write_jsonl(lines, sys.stdout.buffer)
        sys.stdout.flush()
    else:
        with open(args.output, "wb") as out:
            write_jsonl(lines, out)
    rate = len(items) / seconds if seconds > 0 else 0.0
    counts = _batch_counts(lines)
    summary = {
        "positions": len(items),
        "distinct": distinct,
        **counts,
        "seconds": round(seconds, 3),
        "positions_per_second": round(rate, 1),
        "output": args.output,
        "server": args.server,
    }
    where = f" on {args.server}" if args.server else ""
    noun = "position" if len(items) == 1 else "positions"
    text = (
        f"{len(items)} {noun} in {seconds:.2f} s ({rate:,.1f}/s){where}: "
        f"{counts['exact']} exact, {counts['estimated']} estimated, {counts['cached']} cached, "
        f"{counts['errors']} {'error' if counts['errors'] == 1 else 'errors'} -> {args.output}"
    )
    # The summary goes to stderr when the answers go to stdout (the JSON lines stay clean).
    if args.json or not args.quiet or args.output != "-":
        print(
            json.dumps(summary) if args.json else text,
            file=sys.stderr if args.output == "-" else sys.stdout,
        )
    if interrupted is not None:
        print(
            f"interrupted (Ctrl-C): {interrupted.finished} of {interrupted.total} distinct "
            f"positions were analysed and written to {args.output}; the line of each other "
            "position is null",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


def _batch_counts(lines: Sequence[bytes]) -> dict[str, int]:
    """How many result lines are exact answers, estimates, answered from the cache, and
    problems (an item's error: a problem+json object with a ``status``)."""
    counts = {"exact": 0, "estimated": 0, "cached": 0, "errors": 0}
    for line in lines:
        result = json.loads(line)
        if result is None:  # not analysed: the batch was interrupted
            continue
        if "status" in result and "title" in result:
            counts["errors"] += 1
            continue
        counts["exact" if result.get("exact") else "estimated"] += 1
        counts["cached"] += bool(result.get("cached"))
    return counts


def add_batch(commands: Commands) -> None:
    batch = add_command(
        commands,
        "batch",
        cmd_batch,
        "analyse every position of a file (JSONL or CSV) on every core or on a server",
    )
    batch.add_argument(
        "input",
        metavar="IN",
        help="JSON lines (an item object {position, rules, limits} or a position string per "
        "line) or a .csv with a header (position, rules, time_ms, depth, nodes); - for stdin",
    )
    batch.add_argument(
        "-o", "--output", default="-", metavar="OUT", help="JSON lines, one per item (default -)"
    )
    batch.add_argument("--time-ms", type=int, default=None, metavar="MS", help="budget per item")
    batch.add_argument("--depth", type=int, default=None, metavar="D", help="heuristic depth")
    batch.add_argument("--nodes", type=int, default=None, metavar="N", help="node budget per item")
    batch.add_argument(
        "--workers",
        type=int,
        default=len(os.sched_getaffinity(0)),
        metavar="N",
        help="local processes (default: every core)",
    )
    batch.add_argument(
        "--server", default=None, metavar="URL", help="send the batch to this API instead"
    )
    batch.add_argument(
        "--key",
        default=os.environ.get("KALAH_API_KEY"),
        metavar="KEY",
        help="API key for --server (default $KALAH_API_KEY): a batch run as a job needs one",
    )
    batch.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_worker(args: argparse.Namespace) -> int:
    """Run a batch worker on the API's Redis (KALAH_REDIS_URL or --redis-url; the jobs in
    KALAH_STATE_REDIS_URL when set)."""
    if args.redis_url:
        os.environ["KALAH_REDIS_URL"] = args.redis_url
    if not os.environ.get("KALAH_REDIS_URL") and not os.environ.get("KALAH_STATE_REDIS_URL"):
        raise KalahError("kalah worker needs the API's Redis: set KALAH_REDIS_URL or --redis-url")
    from ..jobs.worker import run_worker
    from .backends import worker_backends

    return run_worker(worker_backends, burst=args.burst, name=args.name)


def add_worker(commands: Commands) -> None:
    worker = commands.add_parser(
        "worker",
        help="run a batch worker on the API's Redis",
        description="Take chunks of batch jobs from the API's Redis and analyse them with a "
        "warm engine, and the boards of books built with kalah book build --redis-url; any "
        "number of workers on any number of machines may share one Redis.",
    )
    worker.set_defaults(func=cmd_worker)
    worker.add_argument("--redis-url", default=None, metavar="URL", help="default: KALAH_REDIS_URL")
    worker.add_argument("--burst", action="store_true", help="stop when no chunk waits or runs")
    worker.add_argument(
        "--name",
        default=None,
        help="the worker's name in logs and in the count of workers alive (default: host:pid)",
    )


# --------------------------------------------------------------------- the service


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP API under gunicorn (api/ops/gunicorn_conf.py)."""
    from .serve import serve

    return serve(args.host, args.port, args.workers, behind_proxy=args.behind_proxy)


def add_serve(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the HTTP API under gunicorn")
    serve.set_defaults(func=cmd_serve)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1); any other than loopback needs "
        "--behind-proxy",
    )
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=None, help="default: KALAH_WORKERS or cores")
    serve.add_argument(
        "--behind-proxy",
        action="store_true",
        help="a buffering reverse proxy (nginx: deploy/k8s/nginx.conf) is in front: allow a "
        "non-loopback --host (bare gunicorn is refused there: slow clients hold its threads)",
    )


def cmd_keys(args: argparse.Namespace) -> int:
    """API keys of the service: ``kalah keys create|revoke``."""
    from .key_admin import cli

    return cli(args.keys_command, tier=args.tier, key=args.key, as_json=args.json)


def add_keys(commands: Commands) -> None:
    keys = commands.add_parser(
        "keys",
        help="API keys of the service: create, revoke (in the Redis of KALAH_REDIS_URL)",
        description="API keys: each has a tier; only its SHA-256 digest is stored.",
    )
    keys.set_defaults(func=cmd_keys, tier="standard", key="")
    keys_commands = keys.add_subparsers(
        title="commands", dest="keys_command", required=True, metavar="COMMAND"
    )
    keys_create = keys_commands.add_parser("create", help="make a key; it is printed once")
    keys_create.add_argument(
        "--tier", default="standard", help="anonymous, standard or premium (default standard)"
    )
    keys_revoke = keys_commands.add_parser("revoke", help="revoke a key, given itself or its id")
    keys_revoke.add_argument("key", metavar="KEY_OR_ID")
    for sub in (keys_create, keys_revoke):
        sub.add_argument("--json", action="store_true", help="print the result as JSON")
