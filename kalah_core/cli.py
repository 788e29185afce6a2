"""The ``kalah`` command line: look at positions, list moves, replay games, solve.

The engine's commands (``show``, ``moves``, ``replay``, ``solve``, ``bench``, ``egdb``) live
here. Other packages add commands through the ``kalah.commands`` entry point group: each entry
is named after its command and points to a function ``add(commands)`` that adds the
subcommand (the service's, in :mod:`api.commands`). This package never imports them by name;
a command whose entry cannot be loaded (its package's requirements are missing) is still
listed and, when run, says in one line what to install.

Every subcommand is a small function ``cmd_<name>(args) -> int`` registered in
:func:`build_parser` with :func:`add_command`, which also gives it the shared options (the
rules and ``--json``). Inside a command, :func:`rules_from_args` builds the :class:`Rules`
and :func:`position_from_arg` reads a POSITION (``start``, compact notation or JSON), and
:func:`emit` prints either the human text or the JSON document. A
:class:`~kalah_core.errors.KalahError` raised by a command becomes a one-line message on
stderr (and ``{"error": ..., "field": ...}`` on stdout with ``--json``) and exit status 2.

To add a command: write ``cmd_foo(args) -> int``, then in :func:`build_parser`
``parser = add_command(commands, "foo", cmd_foo, "one-line help")`` and add its own
arguments to ``parser``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from . import __version__, book, databases, deepbook
from .answer import analysis_json
from .bench import BENCH_TT_MB, run_bench
from .databases import build_dir
from .egdb import EndgameDatabase, build, default_path, rule_key
from .errors import InvalidRulesError, KalahError
from .finnish import house_token
from .game import Game, legal_moves, outcome, play
from .position import Position, Side, parse_position
from .results import Analysis
from .rules import OPTION_DOCS, PRESET_DOCS, PRESETS, Rules
from .solver import ENGINE_VERSION, MAX_THREADS, Engine, Prove

if TYPE_CHECKING:
    from .tasks import Executor

# The commands that build books or play on a KGP server import their modules when they run:
# `kalah solve` starts in a fraction of a second without them (multiprocessing, sockets, ...).

BUILT_IN = frozenset(("show", "moves", "replay", "solve", "kgp", "bench", "egdb", "book"))
"""This package's commands (``build_parser(plugins=False)``'s); the others are plugins."""

EXIT_OK = 0
EXIT_ERROR = 2
"""Exit status for bad input, the same as argparse's own usage errors."""
EXIT_INTERRUPTED = 130
"""Exit status of ``kalah solve`` stopped by Ctrl-C (128 + SIGINT, as a shell reports it);
it still prints what is proven so far."""

Command = Callable[[argparse.Namespace], int]
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The ``kalah`` subcommands, to which an entry point of ``kalah.commands`` adds its own."""

COMMANDS_GROUP = "kalah.commands"

RULES_DOC = "docs/rules.md"
"""The rules in the project's words (presets, options, the Finnish notation)."""

POSITION_HELP = (
    "'start', the compact notation (e.g. 444444-0-444444-0-s) or the JSON form "
    '(e.g. \'{"south": [4,4,4,4,4,4], "north": [4,4,4,4,4,4], "stores": [0,0], '
    '"to_move": "south"}\')'
)

# The options that override a preset, as (flag, rule option, argparse keywords).
_RULE_OPTIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("--houses", "houses", {"type": int, "metavar": "N"}),
    ("--seeds", "seeds", {"type": int, "metavar": "N"}),
    ("--capture", "capture", {"metavar": "nonempty|always"}),
    ("--end", "end", {"metavar": "either-side-empty|mover-empty"}),
    ("--remaining", "remaining", {"metavar": "owner|empty-side"}),
    ("--majority", "majority", {"action": argparse.BooleanOptionalAction}),
    ("--pie", "pie", {"action": argparse.BooleanOptionalAction}),
)


# --------------------------------------------------------------------- shared helpers


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Give a subcommand ``--json``, ``--rules PRESET`` and one override per rule option.

    Choices are checked by :class:`Rules`, not by argparse, so that a bad value is reported
    like every other engine error (and as JSON under ``--json``)."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    group = parser.add_argument_group("rules", "a preset, then overrides of single options")
    group.add_argument(
        "--rules",
        default="kalah",
        metavar="PRESET",
        help="one of " + ", ".join(PRESETS) + " (default kalah), or a JSON object of options",
    )
    for flag, option, kwargs in _RULE_OPTIONS:
        group.add_argument(flag, dest=option, default=None, help=OPTION_DOCS[option], **kwargs)


def add_book_search_options(
    parser: argparse.ArgumentParser, *, checkpoint: str, minutes: str, majority: bool = False
) -> None:
    """The options every book build takes: its databases, table, checkpoint and time."""
    none_under_majority = "; none under majority" if majority else ""
    parser.add_argument(
        "--egdb",
        action="append",
        default=[],
        metavar="PATH",
        help=f"endgame database (default: the largest KALAH_EGDB_PATH finds{none_under_majority})",
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


def add_command(
    commands: Commands,
    name: str,
    func: Command,
    help_text: str,
) -> argparse.ArgumentParser:
    """Register the subcommand ``name`` run by ``func``, with the shared options."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    add_common_options(parser)
    parser.set_defaults(func=func)
    return parser


def rules_from_args(args: argparse.Namespace) -> Rules:
    """The rules chosen by ``--rules`` and the per-option overrides."""
    text: str = args.rules
    base = (
        Rules.from_json(_json_object(text, "rules"))
        if text.lstrip().startswith("{")
        else Rules.preset(text)
    )
    overrides = {option: getattr(args, option) for _, option, _ in _RULE_OPTIONS}
    return base.replace(**{k: v for k, v in overrides.items() if v is not None})


def position_from_arg(text: str | None, rules: Rules) -> Position:
    """A POSITION argument (``start`` when omitted), checked against ``rules``."""
    return Position.start(rules) if text is None else parse_position(text, rules)


def emit(args: argparse.Namespace, text: str, data: object) -> None:
    """Print ``data`` as JSON under ``--json``, else the human ``text``."""
    print(json.dumps(data) if args.json else text)


def _json_object(text: str, what: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidRulesError(what, text, f"a preset name or a JSON object ({error})") from None


def _score_json(score: tuple[int, int] | None) -> list[int] | None:
    return None if score is None else list(score)


def _score_text(score: tuple[int, int]) -> str:
    south, north = score
    verdict = "draw" if south == north else ("South" if south > north else "North") + " wins"
    return f"South {south}, North {north}: {verdict}"


# --------------------------------------------------------------------- the board picture


def board_text(position: Position) -> str:
    """An ASCII board: North's houses on top as North sees them (house h..1 from left to
    right), South's houses 1..h below, North's store on the left, South's on the right."""
    h = position.houses
    width = max(3, *(len(str(c)) for c in (*position.south, *position.north)))
    left = len(str(position.stores[1]))
    pad = " " * (left + 1)
    rule = pad + "+" + "+".join("-" * (width + 2) for _ in range(h)) + "+"

    def labels(numbers: Sequence[int], name: str) -> str:
        return pad + " " + " ".join(f"{n:^{width + 2}}" for n in numbers) + "  " + name

    def row(counts: Sequence[int]) -> str:
        return pad + "|" + "|".join(f" {c:>{width}} " for c in counts) + "|"

    return "\n".join(
        [
            labels(range(h, 0, -1), "North"),
            rule,
            row(position.north[::-1]),
            f"{position.stores[1]} " + rule[left + 1 :] + f" {position.stores[0]}",
            row(position.south),
            rule,
            labels(range(1, h + 1), "South"),
        ]
    )


def position_summary(position: Position, rules: Rules) -> str:
    """The board, then the side to move or the final score."""
    lines = [board_text(position), f"position: {position.compact()}"]
    result = outcome(position, rules)
    if result is None:
        swap = (
            " (may answer 'swap')"
            if position.swap_available and position.to_move is Side.NORTH
            else ""
        )
        lines.append(f"{position.to_move.value.capitalize()} to move{swap}")
    else:
        lines.append(f"game over: {_score_text(result.score)}")
    return "\n".join(lines)


# --------------------------------------------------------------------- commands


def cmd_show(args: argparse.Namespace) -> int:
    """Draw a position and say who is to move, or the score when the game is over."""
    rules = rules_from_args(args)
    position = position_from_arg(args.position, rules)
    result = outcome(position, rules)
    data = {
        "position": position.to_json(),
        "compact": position.compact(),
        "to_move": position.to_move.value,
        "over": result is not None,
        "score": _score_json(result.score if result else None),
        "rules": rules.to_json(),
    }
    emit(args, position_summary(position, rules), data)
    return EXIT_OK


def cmd_moves(args: argparse.Namespace) -> int:
    """List every legal move with the position it leads to and what it does."""
    rules = rules_from_args(args)
    position = position_from_arg(args.position, rules)
    results = [play(position, rules, move) for move in legal_moves(position, rules)]
    data = {
        "position": position.compact(),
        "moves": [
            {
                "move": r.move,
                "position": r.after.compact(),
                "extra_turn": r.extra_turn,
                "captured": r.captured,
                "over": r.over,
                "score": _score_json(r.score),
            }
            for r in results
        ],
    }
    if not results:
        text = f"no legal moves in {position.compact()}: the game is over"
    else:
        width = max(len(r.after.compact()) for r in results)
        header = f"{'move':<5} {'position':<{width}}  extra  captured  over"
        rows = [
            f"{r.move!s:<5} {r.after.compact():<{width}}  {'yes' if r.extra_turn else 'no':<5}  "
            f"{r.captured:<8}  {'no' if r.score is None else _score_text(r.score)}"
            for r in results
        ]
        text = "\n".join(
            [
                f"{position.to_move.value.capitalize()} to move in {position.compact()}",
                header,
                *rows,
            ]
        )
    emit(args, text, data)
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a game in the Finnish notation and print where it ends."""
    rules = rules_from_args(args)
    start = position_from_arg(args.start, rules)
    game = Game.parse_fi(args.game, rules, start)
    result = game.outcome()
    score = result.score if result else None
    data = {
        "position": game.position.to_json(),
        "over": result is not None,
        "score": _score_json(score),
    }
    text = "\n".join([f"moves: {game.fi()}", position_summary(game.position, rules)])
    emit(args, text, data)
    return EXIT_OK


# --------------------------------------------------------------------- solver commands


def analysis_text(position: Position, analysis: Analysis) -> str:
    if analysis.over:
        return f"{position.compact()}: the game is over, value {analysis.value:+d}"
    book = analysis.extra.get("book")
    if book and book.get("kind") == "deep" and not analysis.exact:
        verdict = (
            f"value {analysis.value:+d} (deep book: heuristic, depth {analysis.depth}), "
            f"proven between {analysis.lower:+d} and {analysis.upper:+d}"
        )
    elif book and book.get("kind") == "deep":
        verdict = f"value {analysis.value:+d} (exact: deep book)"
    elif book:
        verdict = f"value {analysis.value:+d} (exact: opening book, {book['depth']} sowings)"
    elif analysis.exact:
        verdict = f"value {analysis.value:+d} (exact)"
    else:
        verdict = (
            f"value {analysis.value:+d} (heuristic, depth {analysis.depth}), "
            f"proven between {analysis.lower:+d} and {analysis.upper:+d}"
        )
    rows = [
        f"  {m.move!s:>4}  {m.value:+4d}  "
        + ("exact" if m.exact else f"estimate in [{m.lower:+d}, {m.upper:+d}]")
        + ("  extra turn" if m.extra_turn else "")
        + (f"  captures {m.captured}" if m.captured else "")
        for m in analysis.moves
    ]
    pv = "  ".join("".join(house_token(move) for move in turn) for turn in analysis.pv)
    return "\n".join(
        [
            f"{position.to_move.value.capitalize()} to move in {position.compact()}: {verdict}",
            "best: " + ", ".join(str(m) for m in analysis.best_moves),
            "moves (value for the player to move):",
            *rows,
            f"pv (turns): {pv}",
            f"{analysis.nodes:,} nodes in {analysis.time_ms:.1f} ms",
        ]
    )


def cmd_solve(args: argparse.Namespace) -> int:
    """Solve a position exactly, or give proven bounds and an estimate within the budget."""
    rules = rules_from_args(args)
    position = position_from_arg(args.position, rules)
    engine = Engine(
        tt_mb=args.tt_mb,
        book=None if args.no_book else book.shipped(),
        threads=args.threads or len(os.sched_getaffinity(0)),
        deep_book=None if args.no_book else deepbook.shipped(),
    )
    budget_ms = args.time * 1000.0 if args.time else None
    if args.egdb:
        for path in args.egdb:
            engine.attach(EndgameDatabase.open(path, rules))
    elif not rules.majority:  # what KALAH_EGDB_PATH finds (the cache folder by default)
        for database in databases.open_best(key=rule_key(rules)):
            engine.attach(database)
    prove: Prove = args.prove or ("optimal" if args.best_only else "all")
    show = sys.stderr.isatty() if args.progress is None else args.progress
    engine.unbounded_rounds = show  # bounds that narrow while the user watches
    analysis, interrupted = _analyse_interruptibly(
        engine,
        lambda: engine.analyse(
            position, rules, time_ms=budget_ms, nodes=args.nodes, depth=args.depth, prove=prove
        ),
        show,
    )
    time_ms = None if budget_ms is None else round(budget_ms)
    limits = {"time_ms": time_ms, "depth": args.depth, "nodes": args.nodes}
    data = analysis_json(position, rules, analysis, limits)
    text = analysis_text(position, analysis)
    if interrupted:
        data["interrupted"] = True
        text = f"interrupted: what is proven so far\n{text}"
    emit(args, text, data)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


PROGRESS_EVERY_S = 0.5
"""How often ``kalah solve`` rewrites its progress line on a terminal."""


def _analyse_interruptibly(
    engine: Engine, analyse: Callable[[], Analysis], show: bool
) -> tuple[Analysis, bool]:
    """Run ``analyse`` on a thread of its own, so that Ctrl-C (SIGINT) reaches this one at
    once: the search runs without the GIL, and a signal handler runs only between bytecodes
    of the main thread. Ctrl-C interrupts the search (no KeyboardInterrupt), which returns
    within a few ms with what is proven so far. With ``show``, a line on stderr gives the
    proven bounds and nodes/s, rewritten as they change. Returns the analysis and whether it
    was interrupted."""
    outcome: list[Analysis] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(analyse())
        except BaseException as error:  # re-raised on the calling thread
            failure.append(error)
        finally:
            done.set()

    worker = threading.Thread(target=run, name="kalah-solve", daemon=True)
    started = time.perf_counter()
    shown = ""
    stop = threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        stop.set()
        engine.interrupt()

    # A handler that interrupts the search instead of raising KeyboardInterrupt wherever the
    # main thread happens to be (the main thread only, where Python runs signal handlers).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main_thread else None
    try:
        worker.start()
        while not done.wait(PROGRESS_EVERY_S / 5 if stop.is_set() else PROGRESS_EVERY_S):
            if stop.is_set():
                engine.interrupt()  # again each time round: the analysis may not have begun
            elif show:
                shown = _show_progress(engine, started, shown)
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)
    interrupted = stop.is_set()
    if show and shown:
        sys.stderr.write("\r" + " " * len(shown) + "\r")
        sys.stderr.flush()
    if failure:
        raise failure[0]
    return outcome[0], interrupted


def _show_progress(engine: Engine, started: float, shown: str) -> str:
    progress = engine.progress()
    if progress is None:
        return shown
    lower, upper, nodes = progress
    elapsed = time.perf_counter() - started
    rate = nodes / max(elapsed, 1e-9)
    line = (
        f"proven [{lower:+d}, {upper:+d}]  {_si(nodes)} nodes  {_si(rate)} nodes/s  "
        f"{int(elapsed) // 60}:{int(elapsed) % 60:02d}  (Ctrl-C: stop with these bounds)"
    )
    sys.stderr.write("\r" + line.ljust(len(shown)))
    sys.stderr.flush()
    return line


def _si(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f}"


def cmd_bench(args: argparse.Namespace) -> int:
    """Analyse the fixed bench list; the node count fingerprints the search."""
    rows = run_bench(args.tt_mb)
    nodes = sum(r.nodes for r in rows)
    ms = sum(r.time_ms for r in rows)
    lines = [
        f"{r.rules.key:<12} {r.position:<24} {r.value:+4d} {'exact' if r.exact else 'heur.'} "
        f"{r.nodes:>12,} {r.time_ms:>9.1f} ms"
        for r in rows
    ]
    lines.append(
        f"total nodes {nodes:,}  time {ms:.0f} ms  ({nodes / max(ms, 1e-9) / 1000:.2f} Mnodes/s)"
    )
    data = {
        "positions": [
            {
                "rules": r.rules.to_json(),
                "position": r.position,
                "value": r.value,
                "exact": r.exact,
                "nodes": r.nodes,
                "time_ms": round(r.time_ms, 3),
            }
            for r in rows
        ],
        "nodes": nodes,
        "time_ms": round(ms, 3),
    }
    emit(args, "\n".join(lines), data)
    return EXIT_OK


# --------------------------------------------------------------------- endgame database


def cmd_kgp(args: argparse.Namespace) -> int:
    """Play freeplay games on a KGP server, then print a summary (docs/kgp.md)."""
    import logging

    from .kgp import check_server
    from .kgp_agent import Agent, AgentOptions, cpu_limit, default_tt_mb, make_engine

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = AgentOptions(
        server=check_server(args.server),
        games=args.games,
        name=args.name,
        token=args.token,
        time_per_move=args.time_per_move,
        threads=args.threads or cpu_limit(),
        tt_mb=args.tt_mb or default_tt_mb(),
        opponent_may_err=args.opponent_may_err,
        memory=not args.no_memory,
    )
    if options.games is not None and options.games < 1:
        raise InvalidRulesError("games", options.games, "a positive number of games")
    if not 0.05 <= options.time_per_move <= 3600:
        raise InvalidRulesError("time-per-move", options.time_per_move, "0.05..3600 seconds")
    engine, result_db = make_engine(options)
    agent = Agent(options, engine, result_db)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: agent.stop())
    summary = agent.run()
    mean = summary.mean_margin
    emit(
        args,
        summary.text(),
        {
            "games": summary.games,
            "wins": summary.wins,
            "draws": summary.draws,
            "losses": summary.losses,
            "unknown": summary.unknown,
            "mean_margin": None if mean is None else round(mean, 3),
            "records": [
                {
                    "number": r.number,
                    "houses": r.rules.houses,
                    "seeds": r.rules.seeds,
                    "side": "south" if r.we_south else "north",
                    "result": r.result,
                    "margin": r.margin,
                    "game": r.notation(),
                }
                for r in agent.records
            ],
        },
    )
    return EXIT_OK


def cmd_egdb_build(args: argparse.Namespace) -> int:
    """Build the endgame database of every board with at most --seeds seeds in houses."""
    max_seeds: int = args.seeds
    # --seeds is the database's bound here, not the start's seeds (which no database uses).
    rules = rules_from_args(argparse.Namespace(**{**vars(args), "seeds": None}))
    path = args.output or default_path(rules, max_seeds, build_dir())
    if args.server_pid:
        _stop_with(args.server_pid)
    stats = build(
        path,
        rules,
        max_seeds,
        progress=not args.quiet,
        threads=args.threads,
        progress_file=args.progress_file,
        log=_log_line if args.log else None,
    )
    data = {
        "path": str(stats.path),
        "rules": str(stats.key),
        "max_seeds": stats.max_seeds,
        "entries": stats.entries,
        "bytes": stats.file_bytes,
        "threads": stats.threads,
        "solve_seconds": round(stats.solve_seconds, 3),
        "write_seconds": round(stats.write_seconds, 3),
    }
    text = (
        f"{stats.path}: rules {stats.key}, at most {stats.max_seeds} seeds in houses, "
        f"{stats.entries:,} boards, {stats.file_bytes:,} bytes; built in "
        f"{stats.solve_seconds:.1f} s on {stats.threads} thread(s), written in "
        f"{stats.write_seconds:.1f} s"
    )
    emit(args, text, data)
    return EXIT_OK


def _log_line(text: str) -> None:
    print(f"kalah egdb build: {text}", file=sys.stderr, flush=True)


SERVER_POLL_S = 1.0
"""How often a build started by a server checks that the server is still there."""


def _stop_with(server_pid: int) -> None:
    """End this process (a build started by a server) when the server process ends, however
    it ends: SIGTERM from the kernel when it is this process's parent (``PR_SET_PDEATHSIG``,
    Linux), and a thread that checks every SERVER_POLL_S that it still runs. SIGTERM becomes
    SystemExit, so the build cancels and removes its temporary files."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if server_pid == os.getppid() and sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

    def watch() -> None:
        while _process_alive(server_pid):
            time.sleep(SERVER_POLL_S)
        _log_line(f"the server (pid {server_pid}) is gone: stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    if not _process_alive(server_pid):  # gone before the watch began
        sys.exit(128 + signal.SIGTERM)
    threading.Thread(target=watch, name="server-watch", daemon=True).start()


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists


def cmd_egdb_info(args: argparse.Namespace) -> int:
    """Describe an endgame database file (and check its entries with --verify)."""
    db = EndgameDatabase.open_any(args.path)
    data: dict[str, Any] = {
        "path": str(db.path),
        "format_version": db.header.version,
        "houses": db.houses,
        "capture": db.key.capture,
        "end": db.key.end,
        "remaining": db.key.remaining,
        "rules": str(db.key),
        "max_seeds": db.max_seeds,
        "entries": db.entries,
        "checksum": f"{db.header.checksum:016x}",
    }
    lines = [f"{key}: {value}" for key, value in data.items()]
    if args.verify:
        data["verified"] = db.verify()
        lines.append("checksum " + ("verified" if data["verified"] else "MISMATCH: damaged file"))
    emit(args, "\n".join(lines), data)
    return EXIT_OK if data.get("verified", True) else EXIT_ERROR


# --------------------------------------------------------------------- opening book


def cmd_book_build(args: argparse.Namespace) -> int:
    """Solve every position of the first --depth sowings and add them to the opening book."""
    from .book_build import build_section, merge

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
        # SIGTERM (a pod stopped) cancels the job on the workers, as Ctrl-C does.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
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


def _redis_executor(given: str) -> Executor:
    """The executor of ``--redis-url`` (no URL: the environment's)."""
    from .tasks import remote_executor

    url = given or os.environ.get("KALAH_STATE_REDIS_URL", os.environ.get("KALAH_REDIS_URL", ""))
    if not url:
        raise KalahError(
            "--redis-url: no URL given and neither KALAH_STATE_REDIS_URL nor KALAH_REDIS_URL is set"
        )
    try:
        return remote_executor("redis", url)
    except ImportError as error:
        raise KalahError(f"--redis-url: {error}") from None


def cmd_book_deep(args: argparse.Namespace) -> int:
    """Add a rule set's deep book: deep estimates and proven bounds of the first sowings."""
    from .deepbook_build import DeepBudget, build_deep_section
    from .tasks import LocalExecutor

    rules = rules_from_args(args)
    paths = tuple(args.egdb)
    if not paths and not rules.majority:
        found = databases.headers().get(rule_key(rules))
        paths = (str(found[0]),) if found else ()
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


def cmd_book_refine(args: argparse.Namespace) -> int:
    """Narrow a deep book section's proven bounds at its start with tests at its frontier."""
    from .deepbook_refine import RefineBudget, refine_section

    rules = rules_from_args(args)
    paths = tuple(args.egdb)
    if not paths and not rules.majority:
        found = databases.headers().get(rule_key(rules))
        paths = (str(found[0]),) if found else ()
    path = args.output or deepbook.SHIPPED
    source = args.input or path
    loaded = deepbook.DeepBook.load(source)
    section = loaded.sections.get(rules.key)
    if section is None or section.rules != rules:
        raise KalahError(f"{source} has no deep book of {rules.key}: build it with kalah book deep")
    million = 1_000_000
    total = None if args.total_mnodes is None else int(args.total_mnodes * million)
    budget = RefineBudget(int(args.first_mnodes * million), total, args.tt_mb, paths)
    key = deepbook.deep_key(Position.start(rules), rules)
    before = section.records[key]
    refined = refine_section(
        section,
        budget,
        checkpoint=args.checkpoint,
        until=time.time() + args.minutes * 60 if args.minutes else None,
    )
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


# --------------------------------------------------------------------- parser and main


def build_parser(plugins: bool = True) -> argparse.ArgumentParser:
    """The ``kalah`` parser; each subcommand's function is in ``args.func``. Without
    ``plugins``, only this package's commands (``BUILT_IN``): no entry point is read."""
    parser = argparse.ArgumentParser(
        prog="kalah",
        description="Kalah engine: positions, moves and games under every rule set of the "
        f"project's rules ({RULES_DOC}).",
        epilog="presets: " + "; ".join(f"{name}: {doc}" for name, doc in PRESET_DOCS.items()),
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"kalah {__version__} (engine {ENGINE_VERSION})",
    )
    commands = parser.add_subparsers(
        title="commands", dest="command", required=True, metavar="COMMAND"
    )

    show = add_command(commands, "show", cmd_show, "draw a position")
    show.add_argument("position", metavar="POSITION", help=POSITION_HELP)

    moves = add_command(commands, "moves", cmd_moves, "list the legal moves and what each does")
    moves.add_argument("position", metavar="POSITION", help=POSITION_HELP)

    replay = add_command(commands, "replay", cmd_replay, "replay a game in the Finnish notation")
    replay.add_argument(
        "game",
        metavar="GAME",
        help="the game, e.g. '45-46, 1*-5, 2-, -63*'; put '--' before a game that starts with '-'",
    )
    replay.add_argument(
        "--from",
        dest="start",
        metavar="POSITION",
        default=None,
        help="start here instead of the start position",
    )
    solve = add_command(commands, "solve", cmd_solve, "solve a position: value, best moves, PV")
    solve.add_argument("position", metavar="POSITION", help=POSITION_HELP)
    solve.add_argument("--time", type=float, default=None, metavar="S", help="time budget, seconds")
    solve.add_argument("--nodes", type=int, default=None, metavar="N", help="node budget")
    solve.add_argument(
        "--depth",
        type=int,
        default=None,
        metavar="D",
        help="heuristic search this many sowings deep instead of solving",
    )
    solve.add_argument(
        "--egdb",
        action="append",
        default=[],
        metavar="PATH",
        help="probe this endgame database (built for the same rules; repeatable); "
        "default: the largest for the rules that KALAH_EGDB_PATH finds",
    )
    solve.add_argument(
        "--no-book", action="store_true", help="search even where the opening book knows"
    )
    solve.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the proven bounds and nodes/s on stderr while solving (default: when "
        "stderr is a terminal); Ctrl-C stops the search and prints what is proven so far",
    )
    solve.add_argument(
        "--best-only",
        action="store_true",
        help="prove the value and every optimal move; other moves only get an upper bound",
    )
    solve.add_argument(
        "--prove",
        choices=("value", "optimal", "all"),
        default=None,
        help="how much to prove: the value and one optimal move, the value and every optimal "
        "move (as --best-only), or every move's value (the default)",
    )
    solve.add_argument(
        "--threads",
        type=_thread_count,
        default=None,
        metavar="T",
        help="cores for the proof (default: every core this process may use)",
    )
    solve.add_argument(
        "--tt-mb",
        type=int,
        default=256,
        metavar="MB",
        help="transposition table size (default 256)",
    )

    kgp = commands.add_parser(
        "kgp",
        help="play on a Kalah Game Protocol server (go-kgp)",
        description="Play freeplay games on a KGP server as an agent, then print a summary. "
        "See docs/kgp.md.",
    )
    kgp.set_defaults(func=cmd_kgp)
    kgp.add_argument(
        "server", metavar="SERVER", help="tcp://HOST:PORT, ws://HOST:PORT/socket or wss://..."
    )
    kgp.add_argument(
        "--games",
        type=int,
        default=None,
        metavar="N",
        help="stop after N games (default: until the server closes)",
    )
    kgp.add_argument("--name", default="kalah-core", help="the name the server shows (info:name)")
    kgp.add_argument("--token", default=None, help="auth:token: one identity across connections")
    kgp.add_argument(
        "--time-per-move",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="thinking time per state, a little under the server's limit (default 1.0)",
    )
    kgp.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="search threads (default: the cores this process may use)",
    )
    kgp.add_argument(
        "--tt-mb",
        type=int,
        default=None,
        metavar="MB",
        help="transposition table (default: a quarter of the memory limit, 16..1024)",
    )
    kgp.add_argument(
        "--opponent-may-err",
        action="store_true",
        help="when losing, play among moves close to the best estimate the one a shallower "
        "opponent is likelier to answer badly (off by default: no measured gain)",
    )
    kgp.add_argument(
        "--no-memory",
        action="store_true",
        help="choose moves by search alone (by default, where the agent moved before, the "
        "results of those games count too)",
    )
    kgp.add_argument("--json", action="store_true", help="print the summary as JSON")
    bench = add_command(commands, "bench", cmd_bench, "fixed analyses: total nodes and time")
    bench.add_argument("--tt-mb", type=int, default=BENCH_TT_MB, metavar="MB")

    egdb = commands.add_parser(
        "egdb",
        help="endgame database: build one, describe one",
        description="The endgame database: the exact value of every board with at most N "
        "seeds in houses (rules sharing houses, capture, end and remaining share one).",
    )
    egdb_commands = egdb.add_subparsers(
        title="commands", dest="egdb_command", required=True, metavar="COMMAND"
    )
    egdb_build = add_command(
        egdb_commands, "build", cmd_egdb_build, "build an endgame database (both cores)"
    )
    for action in egdb_build._actions:  # --seeds is the database's bound here
        if action.dest == "seeds":
            action.help = "N: the database holds every board with at most N seeds in houses"
            action.required = True
    egdb_build.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="default: a name with the rule key in the folder of KALAH_EGDB_PATH "
        "(auto: the cache folder, where every command finds it)",
    )
    egdb_build.add_argument(
        "--threads", type=int, default=None, metavar="T", help="default: every core"
    )
    egdb_build.add_argument("--quiet", action="store_true", help="no progress bar")
    egdb_build.add_argument(
        "--log", action="store_true", help="a line on stderr as each level is done"
    )
    egdb_build.add_argument(
        "--progress-file",
        action="store_true",
        help="also write the progress as JSON to OUT.progress (what a server reports)",
    )
    egdb_build.add_argument(  # the server's background builds: stop when it stops
        "--server-pid", type=int, default=None, help=argparse.SUPPRESS
    )
    egdb_info = egdb_commands.add_parser(
        "info", help="describe a database file", description="Describe a database file."
    )
    egdb_info.set_defaults(func=cmd_egdb_info)
    egdb_info.add_argument("path", metavar="PATH")
    egdb_info.add_argument("--json", action="store_true", help="print the result as JSON")
    egdb_info.add_argument(
        "--verify", action="store_true", help="check the entries against the header's checksum"
    )
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
    book_deep.add_argument("--sowings", type=int, required=True, metavar="N")
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
        majority=True,
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
        "--input", default=None, metavar="PATH", help="the deep book to refine (default: --output)"
    )
    book_refine.add_argument(
        "-o", "--output", default=None, metavar="PATH", help="default: the shipped deep book"
    )
    add_book_search_options(
        book_refine,
        checkpoint="tests' outcomes so far, to resume from",
        minutes="stop after M minutes",
        majority=True,
    )
    book_info = add_command(book_commands, "info", cmd_book_info, "describe a book")
    book_info.add_argument("path", nargs="?", default=None, metavar="PATH")

    if plugins:
        add_plugin_commands(commands)
    return parser


def add_plugin_commands(commands: Commands) -> None:
    """The commands of the ``kalah.commands`` entry points (the service's, when installed)."""
    from importlib import metadata  # scanning the installed packages costs a start-up

    for entry in metadata.entry_points(group=COMMANDS_GROUP):
        try:
            add = entry.load()
        except ImportError as error:
            add_unavailable_command(commands, entry.name, str(error))
        else:
            add(commands)


def add_unavailable_command(commands: Commands, name: str, reason: str) -> None:
    """A command whose package cannot load: it takes any arguments and prints ``reason``."""
    parser = commands.add_parser(name, help=f"(unavailable: {reason})", add_help=False)
    parser.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    parser.set_defaults(func=_unavailable(name, reason), unavailable=True)


def _unavailable(name: str, reason: str) -> Command:
    def run(args: argparse.Namespace) -> int:
        print(f"kalah {name}: {reason}", file=sys.stderr)
        return EXIT_ERROR

    return run


def _thread_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected 1..{MAX_THREADS} threads, got {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kalah`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # A command of this package needs no plugin: reading the entry points (importlib.metadata
    # and the service's module) would add to every `kalah solve`'s start-up.
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(plugins=command not in BUILT_IN)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "unavailable", False):
        parser.error("unrecognized arguments: " + " ".join(unknown))
    func: Command = args.func
    try:
        return func(args)
    except KalahError as error:
        message = str(error).replace("\n", " ")
        if getattr(args, "json", False):
            print(json.dumps({"error": message, "field": error.field}))
        print(f"kalah {args.command}: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader stopped early (``kalah moves start | head -1``): leave without a
        # traceback, and without a second error when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
