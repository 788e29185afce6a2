"""The solver's Python API: exact values, every optimal move, honest bounds under a budget.

Values are from the point of view of the player to move: the final store difference (mover's
store minus opponent's) under perfect play, seeds already stored included. A value is
``exact`` when proven; otherwise ``lower <= true value <= upper`` is proven and ``value`` is a
heuristic estimate from a depth-limited search (``depth`` sowings deep).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from ._board import SWAP_CODE
from ._search import Searcher
from .book import Book
from .budget import (
    ESTIMATE_UNTIL,
    NODES_PER_MS,
    PROBE_SHARE,
    REACH_PER_DB_SEED,
    REACH_PER_DOUBLING,
    REACH_SEEDS,
    ROUND_MS,
    Round,
    _endless,
    _schedule,
    _short,
)
from .deepbook import DeepBook
from .egdb import EndgameDatabase
from .game import SWAP, Move, MoveResult, group_turns, legal_moves, outcome, play
from .position import Position, Side
from .proofs import HEURISTIC_MAX_DEPTH, Proofs, Prove, _Line, _order, with_deep_book
from .results import INFINITY, Analysis, MoveValue, Snapshot
from .rules import Rules

__all__ = ["ENGINE_VERSION", "MAX_THREADS", "Analysis", "Engine", "MoveValue", "Prove", "Snapshot"]


ENGINE_VERSION = "kalah-core-0.1.0/search-11"
"""Changes whenever a search change could change an answer; part of every cache key."""


class Engine(Proofs):
    """A solver with its transposition table, kept warm across analyses (a server keeps one
    per worker). ``analyse`` never runs past its time or node budget by more than a few ms.
    ``threads``: the cores every exact search runs on, sharing the table (one proof, the same
    proven values as one thread)."""

    def __init__(
        self,
        tt_mb: int = 64,
        databases: Sequence[EndgameDatabase] = (),
        book: Book | None = None,
        *,
        threads: int = 1,
        deep_book: DeepBook | None = None,
    ) -> None:
        self.tt_mb = tt_mb
        self.book = book
        """Probed before any search that is not depth-limited: a hit is exact at once."""
        self.deep_book = deep_book
        """Probed after ``book`` when the budget is at most DEEP_BOOK_MS: a hit answers at once
        with the record's deep estimate and proven bounds (exact only where they meet)."""
        self.searcher = Searcher(tt_mb)
        self.searcher.threads = threads
        self.deepen_after = DEEPEN_AFTER
        """Nodes of a proof before it pauses for a deep estimate (see ``_mtdf``)."""
        self.deep_move_depth = DEEP_MOVE_DEPTH
        """After a deep estimate, the proof tries first the moves of heuristic entries this deep."""
        self.unbounded_rounds = False
        """Run an unbounded analysis in endless time rounds (``_endless``), so that its proven
        bounds narrow while a long proof runs: for a caller that shows them (``kalah solve`` on
        a terminal). Off by default: the rounds are cut in time, so the nodes and the line of
        such an analysis would depend on the machine's speed."""
        self._cuts: list[tuple[int, int]] = []  # (move code, v): the root's fail-highs (_settle)
        self._last_cut: tuple[int, int] | None = None  # the last fail-high of _mtdf's position
        # What progress() reads while analyse runs on another thread: the root moves, the root
        # bounds, and the root move whose MTD(f) is running (None: the root's own).
        self._lines: list[_Line] = []
        self._root = (-INFINITY, INFINITY)
        self._live: _Line | None = None
        self._mtdf_running = False
        # For snapshot(), set at once: the depth of the last complete deepening, the deepening
        # underway (depth, root moves done) and its estimates so far (by id of the root move).
        self._at: tuple[int, tuple[int, int] | None, dict[int, int]] = (0, None, {})
        self._book_start: tuple[int, list[list[Move]]] | None = None  # (depth, line) shown
        self._rules: Rules | None = None  # the running analysis's, for snapshot()
        self._restricted = False  # the running analysis has some root moves only
        self.on_deepened: Callable[[Snapshot], None] | None = None
        """Called on the analysis's thread with its snapshot after each complete deepening:
        a live view (the API's streams) sees every one, however fast they come."""
        self.databases: list[EndgameDatabase] = []
        for database in databases:
            self.attach(database)

    def attach(self, database: EndgameDatabase) -> None:
        """Probe ``database`` as exact leaves in every search under the rules it was built
        for (the mapping is shared read-only by every process that opens the file)."""
        key = database.key
        self.searcher.add_database(
            (key.houses, key.capture, key.end, key.remaining, key.total),
            database.table,
            database.max_seeds,
        )
        self.databases.append(database)

    @property
    def threads(self) -> int:
        return self.searcher.threads

    @threads.setter
    def threads(self, threads: int) -> None:
        self.searcher.threads = threads

    def clear(self) -> None:
        self.searcher.clear()

    def interrupt(self) -> None:
        """Stop the analysis running on another thread within a few ms: it returns at once
        with what is proven so far, as when its budget runs out (not exact unless proven).
        The next ``analyse`` clears it, so call it again if that may not have started yet."""
        self.searcher.interrupt()

    def progress(self) -> tuple[int, int, int] | None:
        """(lower, upper, nodes) of the analysis running on another thread: the root value's
        bounds proven so far and the nodes searched; None before its root moves are known."""
        lines = list(self._lines)
        if not lines:
            return None
        s = self.searcher
        root_low, root_high = self._root
        lowers = [ln.lower for ln in lines]
        uppers = [ln.upper for ln in lines]
        if self._mtdf_running:
            live_low, live_high = s.live_bounds
            if self._live is None:  # the root's own MTD(f)
                root_low, root_high = max(root_low, live_low), min(root_high, live_high)
            elif self._live in lines:
                i = lines.index(self._live)
                low, high = sorted((self._live.sign * live_low, self._live.sign * live_high))
                lowers[i], uppers[i] = max(lowers[i], low), min(uppers[i], high)
        return max(max(lowers), root_low), min(max(uppers), root_high), int(s.live_nodes)

    def snapshot(self, pv_limit: int = 16) -> Snapshot | None:
        """What the analysis running on another thread has so far (a live view: ``kalah
        analyse --watch``, the API's streams): the depth of its last complete deepening, the
        nodes, the root's proven bounds and estimate, every root move's estimate and proven
        bounds (best first) and a line from the table; None before its root moves are known.
        Reads only what the search publishes between its steps (as :meth:`progress`)."""
        lines, rules = list(self._lines), self._rules
        progress = self.progress()
        if not lines or progress is None or rules is None:
            return None
        lower, upper, nodes = progress
        if self._restricted:  # the root's bounds are the whole position's
            lower, upper = max(ln.lower for ln in lines), max(ln.upper for ln in lines)
        bounds = [(ln.lower, ln.upper) for ln in lines]
        live = self._live
        if self._mtdf_running and live is not None and live in lines:
            live_low, live_high = self.searcher.live_bounds
            i = lines.index(live)
            low, high = sorted((live.sign * live_low, live.sign * live_high))
            bounds[i] = (max(bounds[i][0], low), min(bounds[i][1], high))
        moves = []
        reached, searching, partial = self._at
        for ln, (low, high) in zip(lines, bounds, strict=True):
            high = min(high, upper)
            estimate = partial.get(id(ln), ln.estimate)
            value = low if low >= high else min(max(estimate, low), high)
            moves.append(
                MoveValue(
                    ln.result.move,
                    value,
                    low >= high,
                    low,
                    max(low, high),
                    ln.result.extra_turn,
                    ln.result.captured,
                    ln.result.after,
                )
            )
        moves.sort(key=lambda m: (-m.value, not m.exact, -m.lower, _order(m.move)))
        value = min(max(moves[0].value, lower), upper)
        book = self._book_start
        source: Literal["search", "deep book"] = "search"
        if book is not None and book[0] == reached:  # the deep book's estimates still stand
            source = "deep book"
            if book[1] and book[1][0][0] == moves[0].move:  # its line, while its best is best
                return Snapshot(
                    reached, nodes, value, lower, upper, moves, book[1], source, searching
                )
        line: list[MoveResult] = []
        best = next(ln for ln in lines if ln.result.move == moves[0].move)
        line.append(best.result)
        node = best.result.after
        while len(line) < pv_limit and outcome(node, rules) is None:
            code = self.searcher.table_move(node)
            if code is None:
                break
            move: Move = SWAP if code == SWAP_CODE else code + 1
            if move not in legal_moves(node, rules):
                break
            line.append(play(node, rules, move))
            node = line[-1].after
        pv = group_turns(line)
        return Snapshot(reached, nodes, value, lower, upper, moves, pv, source, searching)

    def analyse(
        self,
        position: Position,
        rules: Rules,
        *,
        time_ms: float | None = None,
        nodes: int | None = None,
        depth: int | None = None,
        pv_limit: int = 64,
        prove: Prove = "all",
        moves: Sequence[Move] | None = None,
    ) -> Analysis:
        """Analyse ``position`` under ``rules``. With no ``depth``: solve exactly within the
        budget (unbounded when neither ``time_ms`` nor ``nodes`` is given), falling back to
        proven bounds and a heuristic estimate when the budget runs out. With ``depth``: a
        heuristic search that deep only (exact if no leaf needed the evaluation).
        ``prove`` says how much to prove: ``"all"`` the exact value of every move; ``"optimal"``
        the value and every optimal move, the others only bounded (cheaper); ``"value"`` the
        value and one optimal move (cheapest: what a best-move query needs).
        ``moves``: only these root moves (legal ones: as chess engines' ``searchmoves``); the
        value is then the best of theirs, searched move by move (no book answers it)."""
        position.validate(rules)
        restricted = moves is not None
        if restricted:
            prove = "all"  # each move's own value: a root search would prove the others'
        if self.book is not None and depth is None and not restricted:
            hit: Analysis | None = self.book.analysis(position, rules, pv_limit)
            if hit is not None:
                return hit
        from_book: Analysis | None = None  # a long budget's start (_from_book)
        if self.deep_book is not None and depth is None and not restricted:
            hit = self.deep_book.analysis(position, rules, pv_limit)
            if hit is not None and (hit.exact or _short(time_ms, nodes)):
                return hit
            if (
                hit is not None
                and (time_ms or nodes)
                and not self._in_reach(position, time_ms, nodes)
            ):
                from_book = hit  # no proof in sight: deepen past the record (_from_book)
        started = time.perf_counter()
        over = outcome(position, rules)
        if over is not None:
            me = 0 if position.to_move is Side.SOUTH else 1
            value = over.score[me] - over.score[1 - me]
            return Analysis(value, True, value, value, [], [], [], None, 0, _ms(started), over=True)

        s = self.searcher
        s.clear_interrupt()
        self._at, self._book_start = (0, None, {}), None
        self._cuts = []
        # Proven bounds on the root value from a root search.
        root = self._root = (-INFINITY, INFINITY)
        steps: dict[str, int] = {}  # the bounds tests' steps, from one round to the next
        # The rounds of the schedule: (exact search until, bounds until) from the start. An
        # unbounded solve runs endless time rounds (_endless), so that its bounds narrow while a
        # long proof runs; the clock of its budget parts never stops.
        unbounded = depth is None and not time_ms and not nodes and self.unbounded_rounds
        clock_ms = math.inf if unbounded else time_ms
        rounds: Iterator[Round]
        if depth is not None:
            rounds = iter([((time_ms or 0.0, nodes or 0), (0.0, 0))])
        elif unbounded:
            rounds = _endless()
        else:
            rounds = iter(_schedule(time_ms or 0.0, nodes or 0))
        # Exact search gets most of a budget (the first round); what the rounds leave goes to
        # the heuristic fallback.
        first = next(rounds)
        first_ms, first_nodes = first[0]
        s.begin(position, rules, first_ms, max(1, first_nodes) if nodes else 0)
        lines = [
            self._line(position, rules, move)
            for move in legal_moves(position, rules)
            if moves is None or move in moves
        ]
        if not lines:
            raise ValueError("moves: none of them is a legal move of the position")
        self._restricted = restricted
        self._rules = rules
        self._lines = lines
        if depth is not None:
            reached = self._deepen(rules, lines, 1, depth, None)
        elif from_book is not None:
            reached = self._from_book(from_book, rules, lines, started, time_ms, nodes)
            root = self._root
        else:
            reached = self._deepen(rules, lines, 1, HEURISTIC_MAX_DEPTH, ESTIMATE_NODES)
            rounds = itertools.chain([first], rounds)
            if not self._in_reach(position, time_ms, nodes):
                # No proof in sight: the estimate the user sees gets most of the budget (a long
                # budget too: its rounds of proof would leave it shallower than a short one's).
                reached = self._beyond_reach(
                    position, rules, lines, prove, steps, started, time_ms, nodes, reached
                )
                root = self._root
                rounds = iter(())
            for i, (exact_part, bounds_part) in enumerate(rounds):
                if i:  # a later round: the table is warm, the bounds so far stand
                    s.set_budget(*self._part(started, exact_part, clock_ms, nodes))
                root = self._root = self._prove(position, rules, lines, prove, root)
                if not s.aborted or all(ln.exact for ln in lines) or s.interrupted:
                    break
                proven = max(max(ln.lower for ln in lines), root[0])
                if proven < min(max(ln.upper for ln in lines), root[1]):
                    # The value is not proven: a share of the budget buys proven bounds.
                    root = self._root = self._bisect_root(
                        position,
                        rules,
                        lines,
                        root,
                        steps,
                        *self._part(started, bounds_part, clock_ms, nodes),
                    )
                    if s.interrupted:
                        break
            else:  # not proven in any round: the rest improves the estimate
                s.set_budget(*self._part(started, (time_ms or 0.0, nodes or 0), time_ms, nodes))
                reached = self._deepen(
                    rules, lines, reached + 1, HEURISTIC_MAX_DEPTH, None, reached
                )

        self._settle(position, rules, lines, root, time_ms, nodes)
        if self.deep_book is not None and depth is None:
            root = with_deep_book(self.deep_book, position, rules, lines, root)
        if restricted:  # the root's bounds are the whole position's: its moves' say it all
            root = (-INFINITY, INFINITY)
        # Equal estimates: the move with more of its value proven first.
        self._lines = []
        lines.sort(key=lambda ln: (-ln.value, not ln.exact, -ln.lower, _order(ln.result.move)))
        lower = max(max(ln.lower for ln in lines), root[0])
        upper = min(max(ln.upper for ln in lines), root[1])
        exact = lower == upper
        value = lower if exact else min(max(lines[0].value, lower), upper)
        if exact:
            best = [ln.result.move for ln in lines if ln.exact and ln.value == value]
        else:
            # Ties as for an exact answer: estimates are whole seeds, so every move whose
            # estimate equals the best one's is listed (best first, as ``moves``).
            best = [ln.result.move for ln in lines if ln.value == lines[0].value]
        book = self._book_start
        if (
            not exact
            and book is not None
            and book[0] == reached
            and book[1][:1]
            and book[1][0][0] == lines[0].result.move
        ):  # the record's estimates are the answer's: so is its line
            pv = book[1]
        else:
            pv = self._pv(
                position, rules, lines[0], exact, pv_limit if exact else min(pv_limit, reached)
            )
        values = [
            MoveValue(
                ln.result.move,
                ln.value,
                ln.exact,
                ln.lower,
                ln.upper,
                ln.result.extra_turn,
                ln.result.captured,
                ln.result.after,
            )
            for ln in lines
        ]
        return Analysis(
            value,
            exact,
            lower,
            upper,
            best,
            values,
            pv,
            None if exact else reached,
            int(s.nodes),
            _ms(started),
            # Not deepened past the deep book's record: its estimates are the answer's.
            extra=from_book.extra if from_book is not None and reached == from_book.depth else {},
        )

    def _from_book(
        self,
        record: Analysis,
        rules: Rules,
        lines: list[_Line],
        started: float,
        time_ms: float | None,
        nodes: int | None,
    ) -> int:
        """A budget longer than the deep book answers for, on a position it holds: the
        analysis starts from the record (its estimates at its depth, its proven bounds), shown
        at once, and deepens past it; it never ends shallower than the record. The depths up to
        the record's are searched again unseen (the deeper ones need the table they fill:
        a cold depth 20 costs four times an iterative one), then each deeper one replaces the
        estimates. The whole budget goes to the estimate: the record's bounds took hours of
        tests (deepbook_refine), which a budget's tests would not narrow. Leaves the root
        bounds in ``self._root``; returns the depth reached."""
        assert record.depth is not None  # an inexact record: a depth-limited estimate
        by_move = {m.move: m for m in record.moves}
        for line in lines:
            m = by_move[line.result.move]
            line.lower, line.upper = max(line.lower, m.lower), min(line.upper, m.upper)
            line.estimate = min(max(m.value, line.lower), line.upper)
        self._root = (record.lower, record.upper)
        reached = record.depth
        self._at = (reached, None, {})
        self._book_start = (reached, record.pv)
        if self.on_deepened is not None:
            shot = self.snapshot()
            if shot is not None:
                self.on_deepened(shot)
        self.searcher.set_budget(*self._part(started, (time_ms or 0.0, nodes or 0), time_ms, nodes))
        unseen = [dataclasses.replace(line) for line in lines]
        self._deepen(rules, unseen, 1, reached, None, shown=False)
        if self.searcher.aborted:
            return reached
        return self._deepen(rules, lines, reached + 1, HEURISTIC_MAX_DEPTH, None, reached)

    def _in_reach(self, position: Position, time_ms: float | None, nodes: int | None) -> bool:
        """Whether a proof of ``position`` may fit a budget of one round, judged before any
        exact search from its seeds in houses: at most REACH_SEEDS at 1 s without a database,
        REACH_PER_DB_SEED more per seed the endgame database holds (under ``majority`` one built
        for the game's total of seeds),
        REACH_PER_DOUBLING more per doubling of the budget. An unbounded analysis is always in
        reach (it proves or runs forever)."""
        if not time_ms and not nodes:
            return True
        budget_ms = time_ms if time_ms else (nodes or 0) / NODES_PER_MS
        rest = sum(position.south) + sum(position.north)
        reach = REACH_SEEDS + REACH_PER_DB_SEED * max(self.searcher.database_seeds, 0)
        reach += REACH_PER_DOUBLING * math.log2(max(budget_ms, 1.0) / 1000.0)
        return rest <= reach

    def _beyond_reach(
        self,
        position: Position,
        rules: Rules,
        lines: list[_Line],
        prove: Prove,
        steps: dict[str, int],
        started: float,
        time_ms: float | None,
        nodes: int | None,
        reached: int,
    ) -> int:
        """A budget where no proof is in sight (``_in_reach``): PROBE_SHARE for an exact search
        (a short proof may still be there: a forced line, a position the table holds), of at
        most ROUND_MS (a short proof is as short in a long budget; a live view sees nothing
        while it runs), then the estimate deepens until ESTIMATE_UNTIL of the budget, and
        proven bounds get the rest (their tests then aim at the deeper estimate). Leaves the
        root bounds in ``self._root``; returns the depth reached."""
        s = self.searcher

        def until(share: float) -> tuple[float, int]:
            return self._part(
                started, ((time_ms or 0.0) * share, int((nodes or 0) * share)), time_ms, nodes
            )

        budget_ms = time_ms if time_ms else (nodes or 0) / NODES_PER_MS
        s.set_budget(*until(PROBE_SHARE * min(1.0, ROUND_MS / max(budget_ms, 1.0))))
        root = self._root = self._prove(position, rules, lines, prove, self._root)
        if not s.aborted or all(ln.exact for ln in lines):
            return reached
        s.set_budget(*until(ESTIMATE_UNTIL))
        reached = self._deepen(rules, lines, reached + 1, HEURISTIC_MAX_DEPTH, None, reached)
        proven = max(max(ln.lower for ln in lines), root[0])
        if proven < min(max(ln.upper for ln in lines), root[1]):
            self._root = self._bisect_root(position, rules, lines, root, steps, *until(1.0))
        return reached

    def _line(self, position: Position, rules: Rules, move: Move) -> _Line:
        result = play(position, rules, move)
        child = result.after
        sign = 1 if result.extra_turn else -1
        if result.over:
            south, north = child.stores
            v = south - north if position.to_move is Side.SOUTH else north - south
            return _Line(result, sign, v, v, v, True)
        me = child.store(child.to_move) - child.store(child.to_move.other)
        rest = sum(child.south) + sum(child.north)
        if child.swap_available:  # a swap to come exchanges the stores
            low, high = -abs(me) - rest, abs(me) + rest
        else:
            low, high = sorted((sign * (me - rest), sign * (me + rest)))
        bounds = self.searcher.table_bounds(child)
        if bounds is not None:
            b_low, b_high = sorted((sign * bounds[0], sign * bounds[1]))
            low, high = max(low, b_low), min(high, b_high)
        return _Line(result, sign, low, high, (low + high) // 2)

    def _part(
        self, started: float, until: tuple[float, int], time_ms: float | None, nodes: int | None
    ) -> tuple[float, int]:
        """The budget left until a point of the schedule (time from ``started``, nodes)."""
        spent = (time.perf_counter() - started) * 1000.0
        return (
            max(until[0] - spent, 0.01) if time_ms else 0.0,
            max(until[1] - self.searcher.nodes, 1) if nodes else 0,
        )

    def _deepen(
        self,
        rules: Rules,
        lines: list[_Line],
        first: int,
        last: int,
        node_cap: int | None,
        reached: int = 0,
        *,
        shown: bool = True,
    ) -> int:
        """Iterative deepening over the root moves, depths ``first..last``: estimates for
        ordering and the MTD(f) guesses, or the answer in depth-limited mode and as the fallback.
        Stops after an iteration costing more than ``node_cap`` nodes, or when the budget runs
        out (keeping the last complete iteration). Returns the depth completed. A live view
        (snapshot()) sees each root move's estimate as soon as it is searched, deeper than the
        others; not ``shown``: only the depth underway (the table is being filled)."""
        s = self.searcher
        try:
            for d in range(first, last + 1):
                nodes_before = s.nodes
                results: list[tuple[_Line, int, int]] = []
                for line in lines:
                    if line.exact:
                        continue
                    self._at = (self._at[0], (d, len(results)), self._at[2])
                    v, _, aborted, horizon = s.heuristic(
                        line.result.after, rules, d - 1, fresh=False
                    )
                    if aborted:
                        return reached
                    results.append((line, line.sign * v, horizon))
                    if shown:
                        partial = {**self._at[2], id(line): line.sign * v}
                        self._at = (self._at[0], (d, len(results)), partial)
                if not shown:
                    continue
                for line, estimate, horizon in results:
                    line.estimate = min(max(estimate, line.lower), line.upper)
                    if horizon == 0:  # no leaf was estimated: the depth-limited value is exact
                        line.lower = line.upper = estimate
                reached = d
                self._at = (d, None, {})
                if self.on_deepened is not None:
                    shot = self.snapshot()
                    if shot is not None:
                        self.on_deepened(shot)
                if all(line.exact for line in lines):
                    break
                if node_cap is not None and s.nodes - nodes_before > node_cap:
                    break
            return reached
        finally:
            self._at = (self._at[0], None, {})


MAX_THREADS = 64  # threads of one search (the compiled search's limit)
ESTIMATE_NODES = 20_000  # deepen the estimates until they cost about this much per depth
DEEPEN_AFTER = 50_000_000  # nodes of an MTD(f) before it stops for a deep estimate (_mtdf)
DEEP_MOVE_DEPTH = 12  # shallower entries' moves order mid-game proofs worse than the static
#                       order (hard set paused at 5 M nodes, the deepening's first version: 1, 4,
#                       8 sowings took 1.8x, 1.7x, 1.5x the nodes of 12 on its longest position,
#                       2.5x, 2.4x, 2.1x on 14126i); 12 costs Kalah(6,5) 0.7 % more nodes than 1


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
