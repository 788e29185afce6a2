"""``kalah book build``, ``deep``, ``refine`` and ``info``: the opening book and the deep book.

The builders load when a build runs (processes, the job store's executors)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import KalahError
from ..position import Position
from ..rules import PRESETS, Rules
from .options import EXIT_OK, Commands, add_command, emit, rules_from_args, thread_count

if TYPE_CHECKING:
    from ..deepbook import DeepBook
    from ..deepbook_build import DeepBudget
    from ..tasks import Executor


def add_commands(commands: Commands) -> None:
    """Register ``book`` and its subcommands."""
    book = commands.add_parser(
        "book",
        help="opening book: build it, describe it",
        description="The opening book: every move's exact value in every position of the "
        "first sowings, shipped with the package and consulted before any search.",
    )
    book_commands = book.add_subparsers(
        title="commands", dest="book_command", required=True, metavar="COMMAND"
    )
    book_build = add_command(
        book_commands, "build", cmd_book_build, "add the positions of the first sowings"
    )
    book_build.add_argument("--depth", type=int, required=True, metavar="N", help="sowings")
    book_build.add_argument(
        "-o", "--output", default=None, metavar="PATH", help="default: the shipped book"
    )
    book_build.add_argument(
        "--from",
        dest="start",
        default=None,
        metavar="PATH",
        help="the book this build extends, its sections kept ('shipped': the shipped one; "
        "default: the output, if it exists)",
    )
    add_book_search_options(
        book_build,
        checkpoint="solved positions, to resume from",
        minutes="stop solving after M minutes: keep what was solved (depth: the deepest whole "
        "level)",
    )
    add_book_farm_options(
        book_build,
        "solve on the kalah workers of this Redis (their job store; no URL: "
        "$KALAH_STATE_REDIS_URL, else $KALAH_REDIS_URL) instead of --workers local processes; "
        "without --egdb each worker uses its own databases",
    )
    book_deep = add_command(
        book_commands,
        "deep",
        cmd_book_deep,
        "add deep estimates and proven bounds of the first sowings (the deep book)",
    )
    book_deep.add_argument("--sowings", type=int, default=None, metavar="N")
    book_deep.add_argument(
        "--after",
        nargs="+",
        default=None,
        metavar="GAME",
        help="instead of --sowings: add to the book's section the records of the positions "
        "these games (Finnish notation, from the start) lead to, with the first budget",
    )
    book_deep.add_argument(
        "--estimate-mnodes",
        type=float,
        nargs="+",
        required=True,
        metavar="M",
        help="millions of nodes for each position's estimate, one per sowing (the last for "
        "the deeper ones)",
    )
    book_deep.add_argument(
        "--bounds-mnodes",
        type=float,
        nargs="+",
        required=True,
        metavar="M",
        help="millions of nodes for each position's bounds tests, one per --estimate-mnodes",
    )
    book_deep.add_argument(
        "-o", "--output", default=None, metavar="PATH", help="default: the shipped deep book"
    )
    add_book_search_options(
        book_deep,
        checkpoint="records so far, to resume from",
        minutes="start no sowing's positions after M minutes (keep the whole sowings)",
    )
    add_book_farm_options(
        book_deep,
        "make the records on the kalah workers of this Redis (no URL: "
        "$KALAH_STATE_REDIS_URL, else $KALAH_REDIS_URL) instead of --workers local processes; "
        "--egdb paths must be the workers' paths",
    )
    book_refine = add_command(
        book_commands,
        "refine",
        cmd_book_refine,
        "narrow the deep book's proven bounds at the start by tests of its frontier",
    )
    book_refine.add_argument(
        "--first-mnodes",
        type=float,
        default=1.0,
        metavar="M",
        help="millions of nodes of a test's first cap (it doubles each round)",
    )
    book_refine.add_argument(
        "--total-mnodes",
        type=float,
        default=None,
        metavar="M",
        help="stop after this many millions of nodes of tests (a reproducible end)",
    )
    book_refine.add_argument(
        "--warm",
        action="store_true",
        help="keep each worker's table across its tests, as kalah prove does (faster; the "
        "proven bounds are the same facts, but which tests ran, the checkpoint and the "
        "book's other bounds may differ from run to run)",
    )
    book_refine.add_argument(
        "--threads",
        type=thread_count,
        default=1,
        metavar="T",
        help="threads of each test, sharing its worker's table (with --warm; at most the "
        "worker's cores)",
    )
    book_refine.add_argument(
        "--side",
        choices=("lower", "upper"),
        default=None,
        help="claim only the start's lower or upper bound (default: both, the cheaper first)",
    )
    book_refine.add_argument(
        "--input", default=None, metavar="PATH", help="the deep book to refine (default: --output)"
    )
    book_refine.add_argument(
        "-o", "--output", default=None, metavar="PATH", help="default: the shipped deep book"
    )
    add_book_search_options(
        book_refine,
        checkpoint="tests' outcomes so far, to resume from",
        minutes="stop after M minutes and write what is proven (SIGTERM and Ctrl-C do the same)",
    )
    add_book_farm_options(
        book_refine,
        "run the tests on the kalah workers of this Redis (no URL: $KALAH_STATE_REDIS_URL, "
        "else $KALAH_REDIS_URL) instead of --workers local processes; --egdb paths must be "
        "the workers' paths",
    )
    book_info = add_command(book_commands, "info", cmd_book_info, "describe a book")
    book_info.add_argument("path", nargs="?", default=None, metavar="PATH")


def add_book_search_options(
    parser: argparse.ArgumentParser, *, checkpoint: str, minutes: str
) -> None:
    """The options every book build takes: its databases, table, checkpoint and time."""
    parser.add_argument(
        "--egdb",
        action="append",
        default=[],
        metavar="PATH",
        help="endgame database (default: the largest KALAH_EGDB_PATH finds)",
    )
    parser.add_argument("--tt-mb", type=int, default=256, metavar="MB")
    parser.add_argument("--checkpoint", default=None, metavar="PATH", help=checkpoint)
    parser.add_argument("--minutes", type=float, default=None, metavar="M", help=minutes)


def add_book_farm_options(parser: argparse.ArgumentParser, redis_help: str) -> None:
    """Where a book build runs: local processes, or the kalah workers of a Redis."""
    parser.add_argument("--workers", type=int, default=1, metavar="W", help="processes")
    parser.add_argument(
        "--redis-url", nargs="?", const="", default=None, metavar="URL", help=redis_help
    )


def cmd_book_build(args: argparse.Namespace) -> int:
    """Solve every position of the first --depth sowings and add them to the opening book."""
    from .. import book, databases
    from ..book_build import build_section, merge
    from ..egdb import rule_key

    rules = rules_from_args(args)
    key = rule_key(rules)
    found = databases.headers().get(key)
    paths = args.egdb or ([str(found[0])] if found else [])
    presets = [name for name, r in PRESETS.items() if book.rule_key_of(r) == key]
    path = args.output or book.SHIPPED
    start = book.SHIPPED if args.start == "shipped" else args.start or path
    if args.start and not os.path.exists(start):
        raise KalahError(f"--from: no book at {start}")
    old = book.Book.load(start) if os.path.exists(start) else book.Book([])
    earlier = old.sections.get(key)  # what an earlier build solved is not solved again
    executor = None
    solvers: list[str] | None = paths
    if args.redis_url is not None:
        executor = _redis_executor(args.redis_url)
        solvers = args.egdb or None  # else each worker's own (KALAH_EGDB_PATH)
        _cancel_on_sigterm()
    section = build_section(
        rules,
        args.depth,
        solvers,
        presets=presets,
        workers=args.workers,
        tt_mb=args.tt_mb,
        checkpoint=args.checkpoint,
        until=time.time() + args.minutes * 60 if args.minutes else None,
        known=earlier,
        executor=executor,
    )
    if section.key in old.sections:  # keep what an earlier (shallower) build holds
        section = merge(old.sections[section.key], section)
    old.sections[section.key] = section
    old.save(path)
    size = os.path.getsize(path)
    used = "each worker's own" if solvers is None else ", ".join(solvers) or "none"
    emit(
        args,
        f"{path}: {section.key}, {len(section):,} positions, every one within "
        f"{section.depth} sowings (databases: {used}); the book is {size:,} bytes",
        {**section.info(), "path": str(path), "bytes": size, "databases": solvers},
    )
    return EXIT_OK


def _cancel_on_sigterm() -> None:
    """SIGTERM (a pod stopped) cancels the job on the workers, as Ctrl-C does. Only the main
    thread may set a handler: a run started from another thread (an embedding program's)
    keeps the one it has."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM (a pod or job stopped) and Ctrl-C end a long run as its ``--minutes`` do: the
    outcomes in hand are kept and the book is written. A second signal acts as it did before.
    Only the main thread may set handlers (see _cancel_on_sigterm)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGTERM, signal.SIGINT)
    before = {signum: signal.getsignal(signum) for signum in signals}

    def handle(signum: int, frame: object) -> None:
        for s, handler in before.items():
            signal.signal(s, handler)
        sys.stderr.write(f"{signal.Signals(signum).name}: stopping; writing what is proven\n")
        stop.set()

    for signum in signals:
        signal.signal(signum, handle)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _redis_executor(given: str) -> Executor:
    """The executor of ``--redis-url`` (no URL: the environment's)."""
    from ..tasks import remote_executor

    url = given or os.environ.get("KALAH_STATE_REDIS_URL", os.environ.get("KALAH_REDIS_URL", ""))
    if not url:
        raise KalahError(
            "--redis-url: no URL given and neither KALAH_STATE_REDIS_URL nor KALAH_REDIS_URL is set"
        )
    try:
        return remote_executor("redis", url)
    except ImportError as error:
        raise KalahError(f"--redis-url: {error}") from None


def test_run(args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint, the deadline of ``--minutes`` and the executor of ``--workers`` and
    ``--redis-url`` of a run of tests (``book refine``, ``prove``), as keyword arguments."""
    from ..tasks import LocalExecutor

    executor: Executor = LocalExecutor(args.workers)
    if args.redis_url is not None:
        _cancel_on_sigterm()
        executor = _redis_executor(args.redis_url)
    until = time.time() + args.minutes * 60 if args.minutes else None
    return {"checkpoint": args.checkpoint, "until": until, "executor": executor}


def cmd_book_deep(args: argparse.Namespace) -> int:
    """Add a rule set's deep book: deep estimates and proven bounds of the first sowings."""
    from .. import deepbook
    from ..deepbook_build import DeepBudget, build_deep_section
    from ..tasks import LocalExecutor

    rules = rules_from_args(args)
    if (args.sowings is None) == (args.after is None):
        raise KalahError("book deep: give either --sowings or --after")
    if len(args.estimate_mnodes) != len(args.bounds_mnodes):
        raise KalahError("book deep: one --bounds-mnodes for each --estimate-mnodes")
    paths = _deep_databases(args, rules)
    million = 1_000_000
    budgets = [
        DeepBudget(int(e * million), int(b * million), args.tt_mb, paths)
        for e, b in zip(args.estimate_mnodes, args.bounds_mnodes, strict=True)
    ]
    path = args.output or deepbook.SHIPPED
    old = deepbook.DeepBook.load(path) if os.path.exists(path) else deepbook.DeepBook()
    executor: Executor = LocalExecutor(args.workers)
    if args.redis_url is not None:  # the databases' paths must be the workers' too
        executor = _redis_executor(args.redis_url)
    if args.after is not None:
        return _deep_after(args, rules, old, path, budgets[0], executor)
    section = build_deep_section(
        rules,
        args.sowings,
        budgets,
        executor=executor,
        checkpoint=args.checkpoint,
        until=time.time() + args.minutes * 60 if args.minutes else None,
    )
    old.sections[rules.key] = section
    old.save(path)
    size = os.path.getsize(path)
    start = section.records[deepbook.deep_key(Position.start(rules), rules)]
    emit(
        args,
        f"{path}: {rules.key}, {len(section.records):,} positions within {section.sowings} "
        f"sowings; the start: estimate {start.estimate:+d} (depth {start.depth}), proven "
        f"between {start.lower:+d} and {start.upper:+d}; the file is {size:,} bytes",
        {**section.info(), "path": str(path), "bytes": size, "databases": list(paths)},
    )
    return EXIT_OK


def _deep_after(
    args: argparse.Namespace,
    rules: Rules,
    book: DeepBook,
    path: str | os.PathLike[str],
    budget: DeepBudget,
    executor: Executor,
) -> int:
    """``kalah book deep --after``: the records of the positions the games lead to, added to
    the section of ``rules`` already in ``book``."""
    from ..deepbook_build import extend_deep_section
    from ..game import Game

    section = book.sections.get(rules.key)
    if section is None or section.rules != rules:
        raise KalahError(f"book deep --after: {path} has no section of {rules.key}")
    positions = []
    for text in args.after:
        game = Game.parse_fi(text, rules)
        if game.outcome() is not None:
            raise KalahError(f"book deep --after: the game {text!r} is over")
        positions.append(game.position)
    before = len(section.records)
    section = extend_deep_section(
        section,
        positions,
        budget,
        executor=executor,
        checkpoint=args.checkpoint,
        label=args.after,
    )
    book.sections[rules.key] = section
    book.save(path)
    size = os.path.getsize(path)
    added = len(section.records) - before
    emit(
        args,
        f"{path}: {rules.key}, {added} position(s) added after the games, "
        f"{len(section.records):,} in all; the file is {size:,} bytes",
        {**section.info(), "added": added, "path": str(path), "bytes": size},
    )
    return EXIT_OK


def _deep_databases(args: argparse.Namespace, rules: Rules) -> tuple[str, ...]:
    """The databases of a deep book's searches: ``--egdb``, else the largest for the rules
    that KALAH_EGDB_PATH finds (under majority: for the game's total of seeds)."""
    from .. import databases
    from ..egdb import rule_key

    paths = tuple(args.egdb)
    if not paths:
        found = databases.headers().get(rule_key(rules))
        paths = (str(found[0]),) if found else ()
    return paths


def cmd_book_refine(args: argparse.Namespace) -> int:
    """Narrow a deep book section's proven bounds at its start with tests at its frontier."""
    from .. import deepbook
    from ..deepbook_refine import HIGH, LOW, RefineBudget, refine_section

    rules = rules_from_args(args)
    paths = _deep_databases(args, rules)
    path = args.output or deepbook.SHIPPED
    source = args.input or path
    loaded = deepbook.DeepBook.load(source)
    section = loaded.sections.get(rules.key)
    if section is None or section.rules != rules:
        raise KalahError(f"{source} has no deep book of {rules.key}: build it with kalah book deep")
    million = 1_000_000
    total = None if args.total_mnodes is None else int(args.total_mnodes * million)
    budget = RefineBudget(int(args.first_mnodes * million), total, args.tt_mb, paths, args.threads)
    key = deepbook.deep_key(Position.start(rules), rules)
    before = section.records[key]
    sides = {"lower": (LOW,), "upper": (HIGH,), None: (LOW, HIGH)}[args.side]
    run = test_run(args)
    stop = threading.Event()
    with _stopping_on_signals(stop):
        refined = refine_section(section, budget, warm=args.warm, sides=sides, stop=stop, **run)
    loaded.sections[rules.key] = refined
    loaded.save(path)
    start = refined.records[key]
    moves = ", ".join(f"{m.house}: [{m.lower:+d}, {m.upper:+d}]" for m in start.moves)
    last = refined.build["refine"][-1]
    emit(
        args,
        f"{path}: {rules.key}, the start proven between {start.lower:+d} and {start.upper:+d} "
        f"(before: {before.lower:+d} and {before.upper:+d}); its moves {moves}; "
        f"{last['nodes']:,} nodes in {last['tests']:,} tests",
        {
            "path": str(path),
            "rules": rules.key,
            "before": [before.lower, before.upper],
            "start": [start.lower, start.upper],
            "moves": [[m.house, m.lower, m.upper] for m in start.moves],
            "nodes": last["nodes"],
            "tests": last["tests"],
            "databases": list(paths),
        },
    )
    return EXIT_OK


def cmd_book_info(args: argparse.Namespace) -> int:
    """Describe an opening book (the shipped one by default)."""
    from .. import book, deepbook

    path = args.path or book.SHIPPED
    loaded = book.Book.load(path)
    sections = loaded.info()
    lines = [f"{path}: {os.path.getsize(path):,} bytes"] + [
        f"{s['rules']} ({', '.join(s['presets'])}): {s['positions']:,} positions, "
        f"every one within {s['depth']} sowings"
        for s in sections
    ]
    deep: list[dict[str, Any]] = []
    if args.path is None and os.path.exists(deepbook.SHIPPED):  # the shipped deep book too
        deep = deepbook.shipped().info()
        lines.append(f"{deepbook.SHIPPED}: {os.path.getsize(deepbook.SHIPPED):,} bytes")
        lines += [
            f"{s['rules']} {s['houses']}x{s['seeds']} (deep): {s['positions']:,} positions "
            f"within {s['sowings']} sowings: deep estimates and proven bounds (the start: "
            f"[{s['start_lower']}, {s['start_upper']}])"
            for s in deep
        ]
    emit(args, "\n".join(lines), {"path": str(path), "sections": sections, "deep": deep})
    return EXIT_OK
