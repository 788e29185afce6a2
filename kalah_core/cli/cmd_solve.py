"""``kalah solve`` and ``kalah bench``: the search's commands.

The engine's modules load when one of them runs (the solver, the books, the databases), not
when the parser is built: the other commands start without them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..finnish import house_token
from .options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    Commands,
    add_command,
    emit,
    rules_and_position,
    thread_count,
)

if TYPE_CHECKING:
    from ..position import Position
    from ..results import Analysis
    from ..solver import Engine


def add_commands(commands: Commands) -> None:
    """Register ``solve`` and ``bench``."""
    solve = add_command(
        commands, "solve", cmd_solve, "solve a position: value, best moves, PV", position=True
    )
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
        type=thread_count,
        default=None,
        metavar="T",
        help="cores for the proof (default: every core this process may use)",
    )
    solve.add_argument(
        "--tt-mb",
        type=int,
        default=256,
        metavar="MB",
        help="transposition table size: it starts at 16 and grows as it fills, up to this"
        " (default 256)",
    )
    bench = add_command(commands, "bench", cmd_bench, "fixed analyses: total nodes and time")
    bench.add_argument(
        "--tt-mb",
        type=int,
        default=None,
        metavar="MB",
        help="transposition table size (default: the size the bench's node count is pinned at)",
    )


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
    from .. import book, deepbook
    from ..answer import analysis_json
    from ..egdb import EndgameDatabase, rule_key
    from ..solver import Engine, Prove

    rules, position = rules_and_position(args, args.position)
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
    else:  # what KALAH_EGDB_PATH finds (the cache folder by default)
        from .. import databases  # (and logging) only here: --egdb needs neither

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
    # Of the nodes, those whose children were generated: how the published solver counts.
    data["expanded"] = engine.searcher.expanded if analysis.nodes else 0
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
    from ..bench import BENCH_TT_MB, run_bench

    rows = run_bench(BENCH_TT_MB if args.tt_mb is None else args.tt_mb)
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
