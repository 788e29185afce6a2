"""The exact side of an analysis: the root moves' proofs (MTD(f), paused for a deep estimate),
the root value's proven bounds (null-window tests from both sides), every move's bounds as
narrow as the analysis proved them, and a proven principal variation. :class:`Proofs` is the
part of :class:`~kalah_core.solver.Engine` that proves; the engine holds the state it reads."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from ._board import SWAP_CODE
from ._search import Searcher
from .deepbook import DeepBook
from .game import SWAP, Move, MoveResult, group_turns, legal_moves, outcome, play
from .position import Position, Side
from .results import INFINITY
from .rules import Rules

Prove = Literal["all", "optimal", "value"]

HEURISTIC_MAX_DEPTH = 60
SETTLE_MS = 5.0  # to check the move that proved the root's lower bound (_settle), after the
#                budget: a test on the warm table, whose proof of that bound is still there
BISECT_FIRST = 8  # the first bounds test on a side: 1/8 of the way from its bound to the estimate
GUESS_BIAS = 0  # MTD(f) starts this far above the estimate, for the player to move in the
#                searched position. The estimates are low more often than high, but a first
#                test above the value (it fails low) costs more than one as far below: 0
#                searched 3.6 % fewer nodes than 2 over the 82 children of the 15
#                empty-capture hard-set positions, 0.8 % fewer on the 15 (HISTORY.md)
DEEP_STEP = 3  # sowings between the deep estimate's depths
DEEP_SHARE = 2.0  # the deep estimate's nodes, at most, per node of the proof it paused
DEEP_GROWTH = 8.0  # the most one step deeper is assumed to multiply the nodes by
SIDE_TABLE_SHARE = 8  # the deep estimate's own table: this fraction of the proof's (tt_mb)


@dataclass(slots=True)
class _Line:
    """Working state of one root move during an analysis."""

    result: MoveResult
    sign: int  # +1 when the mover moves again (extra turn), -1 when the turn passes
    lower: int
    upper: int
    estimate: int
    estimate_exact: bool = False

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    @property
    def value(self) -> int:
        return self.lower if self.exact else min(max(self.estimate, self.lower), self.upper)


class Proofs:
    """The proofs of :class:`~kalah_core.solver.Engine` (its base class), on the state the
    engine keeps across an analysis."""

    searcher: Searcher
    tt_mb: int
    deepen_after: int
    deep_move_depth: int
    _root: tuple[int, int]
    _cuts: list[tuple[int, int]]
    _last_cut: tuple[int, int] | None
    _live: _Line | None
    _mtdf_running: bool

    def _prove(
        self,
        position: Position,
        rules: Rules,
        lines: list[_Line],
        prove: Prove,
        root: tuple[int, int],
    ) -> tuple[int, int]:
        """One exact stint (until the budget set runs out): every move's value, or the root's
        (and its optimal moves). Returns the root bounds, narrowed."""
        if prove == "all":
            for line in sorted(lines, key=lambda ln: -ln.value):
                if self.searcher.aborted:
                    break
                self._solve(line, rules)
            return root
        low, high = self._solve_root(position, rules, lines, prove == "optimal", root)
        return max(low, root[0]), min(high, root[1])

    def _solve_root(
        self,
        position: Position,
        rules: Rules,
        lines: list[_Line],
        every_optimal: bool,
        root: tuple[int, int],
    ) -> tuple[int, int]:
        """Prove the root value V with one search of the root (siblings share its window),
        then which moves reach V (all of them, or the first found); the others keep the upper
        bounds the table proves. Returns the root bounds (equal unless the budget ran out)."""
        s = self.searcher
        rest = sum(position.south) + sum(position.north)
        mine = position.store(position.to_move) - position.store(position.to_move.other)
        low, high = max(-abs(mine) - rest, root[0]), min(abs(mine) + rest, root[1])
        guess = max(line.value for line in lines) + GUESS_BIAS
        self._last_cut = None
        self._live = None
        low, high = self._mtdf(position, rules, guess, low, high)
        if self._last_cut is not None:
            self._cuts.append(self._last_cut)
        if low != high:
            return low, high
        preferred = s.table_move(position)
        found = any(line.exact and line.value == low for line in lines)
        for line in sorted(lines, key=lambda ln: (_code(ln.result.move) != preferred, -ln.value)):
            if line.exact or (found and not every_optimal):
                continue
            bounds = s.table_bounds(line.result.after)
            if bounds is not None:
                b_low, b_high = sorted((line.sign * bounds[0], line.sign * bounds[1]))
                line.lower, line.upper = max(line.lower, b_low), min(line.upper, b_high)
            line.upper = min(line.upper, low)  # no move is worth more than the root
            if line.upper < low or s.aborted:
                continue
            if (line.lower >= low or self._reaches(line, rules, low)) and not s.aborted:
                line.lower = line.upper = low
                found = True
        return low, high

    def _bisect_root(
        self,
        position: Position,
        rules: Rules,
        lines: list[_Line],
        root: tuple[int, int],
        steps: dict[str, int],
        time_ms: float,
        nodes: int,
    ) -> tuple[int, int]:
        """Proven bounds on the root value within a budget, by null-window tests far from the
        estimate: a test near a bound is cheap, one near the value may take hours (as MTD(f)'s
        first). Each side gallops from its bound towards the estimate and past it: the step
        doubles after a test that succeeds and halves after one that runs out of its share of
        the budget; a side whose smallest step ran out stops. ``steps`` carries each side's
        step to the analysis's next round, which starts where this one stopped: a test that
        ran out is tried again first, on the warm table and with the larger round's budget,
        not after a test farther from the bound, which costs more. Returns the root bounds;
        every root move's upper bound is capped by them."""
        s = self.searcher
        total = rules.total_seeds
        rest = sum(position.south) + sum(position.north)
        mine = position.store(position.to_move) - position.store(position.to_move.other)
        low = max(root[0], max(ln.lower for ln in lines), -abs(mine) - rest)
        high = min(root[1], max(ln.upper for ln in lines), abs(mine) + rest)
        estimate = min(max(max(ln.value for ln in lines), low), high)
        started = time.perf_counter()
        nodes_end = s.nodes + nodes if nodes else 0
        # Values have the parity of the seeds in the game: steps of 2 skip no value.
        steps.setdefault("low", max(2, (estimate - low) // BISECT_FIRST))
        steps.setdefault("high", max(2, (high - estimate) // BISECT_FIRST))
        sides = ["low", "high"]
        while low < high and sides:
            left_ms = time_ms - (time.perf_counter() - started) * 1000.0 if time_ms else 0.0
            left_nodes = nodes_end - s.nodes if nodes else 0
            if (time_ms and left_ms <= 0) or (nodes and left_nodes <= 0):
                break
            side = sides[0]
            sides.append(sides.pop(0))
            # A test of value >= beta raises the lower bound when it holds, lowers the upper
            # bound when it fails.
            beta = low + steps["low"] if side == "low" else high + 1 - steps["high"]
            beta += (beta - total) % 2
            beta = min(max(beta, low + 1), high)
            share = len(sides) + 1
            s.set_budget(
                left_ms / share if time_ms else 0.0, max(1, left_nodes // share) if nodes else 0
            )
            v = s.probe(position, rules, beta - 1, beta)
            if v is None:
                if steps[side] <= 2:
                    sides.remove(side)  # its step stays smallest: the next round tries it first
                else:
                    steps[side] //= 2
            else:
                if v >= beta:
                    low = v
                    if s.cut_move is not None:
                        self._cuts.append((s.cut_move, v))
                else:
                    high = v
                self._root = (max(self._root[0], low), min(self._root[1], high))  # snapshot()
                if (v >= beta) == (side == "low"):
                    steps[side] *= 2
        for line in lines:
            line.upper = min(line.upper, high)
        return low, high

    def _settle(
        self,
        position: Position,
        rules: Rules,
        lines: list[_Line],
        root: tuple[int, int],
        time_ms: float | None,
        nodes: int | None,
    ) -> None:
        """Every move's bounds as narrow as what the analysis proved about that move:

        - the bounds the table holds for the position the move leads to (each root search
          stores its children's bounds there: the tests that failed low bounded every move
          from above, the one that failed high bounded the move that made it fail high);
        - the root's upper bound: no move is worth more than the root;
        - the root's lower bound, for the move that proved it: the root's move stored right
          after a root test failed high (``Searcher.cut_move``, recorded in ``self._cuts``).
          That move is checked before it is trusted, by a null-window test of its child on the
          warm table (the proof is still there) within SETTLE_MS, since a bound the table
          already held carries the move of its entry's last store; if it fails, or the root
          has no table entry (a swap pending), the other moves are tried, best estimate
          first, within the same budget."""
        s = self.searcher
        for line in lines:
            if line.exact:
                continue
            bounds = s.table_bounds(line.result.after)
            if bounds is not None:
                b_low, b_high = sorted((line.sign * bounds[0], line.sign * bounds[1]))
                line.lower, line.upper = max(line.lower, b_low), min(line.upper, b_high)
            line.upper = min(line.upper, root[1])
        target = root[0]
        if target <= max(line.lower for line in lines):
            return
        # The moves that made root tests fail high (the last first), then the others, best
        # estimate first: the first one proven to reach the root's lower bound takes it.
        by_code = {_code(line.result.move): line for line in lines}
        cuts = [
            by_code[code] for code, v in reversed(self._cuts) if v >= target and code in by_code
        ]
        s.set_budget(SETTLE_MS if time_ms else 0.0, max(1, nodes // 100) if nodes else 0)
        tried: set[int] = set()
        for line in cuts + sorted(lines, key=lambda ln: -ln.value):
            if id(line) in tried or line.upper < target:
                continue
            tried.add(id(line))
            if self._proven_at_least(line, rules, target):
                line.lower = target
                break
            if s.aborted:
                break

    def _proven_at_least(self, line: _Line, rules: Rules, target: int) -> bool:
        """Whether a null-window test proves the root move's value >= ``target`` (False when
        it is lower or the budget runs out)."""
        if line.lower >= target:
            return True
        if line.sign > 0:
            ok = self.searcher.test(line.result.after, rules, target)
        else:
            ok = self.searcher.test(line.result.after, rules, -target + 1)
            ok = None if ok is None else not ok
        return bool(ok)

    def _solve(self, line: _Line, rules: Rules) -> None:
        """Narrow a root move's bounds to its exact value (unless the budget runs out)."""
        if line.exact:
            return
        low, high = sorted((line.sign * line.lower, line.sign * line.upper))
        self._live = line
        low, high = self._mtdf(
            line.result.after, rules, line.sign * line.estimate + GUESS_BIAS, low, high
        )
        line.lower, line.upper = sorted((line.sign * low, line.sign * high))

    def _mtdf(
        self, position: Position, rules: Rules, guess: int, low: int, high: int
    ) -> tuple[int, int]:
        """MTD(f) from ``guess`` within [low, high] (proven bounds of ``position``). A proof
        still running after ``deepen_after`` nodes is a long one: it pauses for a deeper estimate,
        whose value is a closer guess and whose moves (``deep_move_depth``) order the rest of
        the proof, then resumes. A short proof never pays for the estimate, whose moves would
        order it worse than the static order.

        The deep estimate searches on a transient table of its own (an eighth of the proof's,
        freed after), so the paused proof's table survives the pause; the estimate's entries
        at least ``deep_move_depth`` deep (and its proven ones) are then stored into it as the
        search would store them. (Until search-10 the first pause emptied the table: the
        paused test's nodes were lost.)"""
        s = self.searcher
        self._mtdf_running = True
        try:
            return self._mtdf_paused(s, position, rules, guess, low, high)
        finally:
            self._mtdf_running = False

    def _mtdf_paused(
        self, s: Searcher, position: Position, rules: Rules, guess: int, low: int, high: int
    ) -> tuple[int, int]:
        low, high, spent, aborted = s.mtdf(
            position, rules, guess, low, high, fresh=False, pause_after=self.deepen_after
        )
        if s.cut_move is not None:
            self._last_cut = (s.cut_move, low)
        if low == high or aborted:
            return low, high
        estimate = self.deep_estimate_aside(position, rules, spent)
        if estimate is None:  # the budget ran out
            return low, high
        move_depth = s.heuristic_move_depth
        s.heuristic_move_depth = min(move_depth, self.deep_move_depth)
        try:
            low, high, _, _ = s.mtdf(position, rules, estimate, low, high, fresh=False)
        finally:
            s.heuristic_move_depth = move_depth
        if s.cut_move is not None:
            self._last_cut = (s.cut_move, low)
        return low, high

    def deep_estimate_aside(self, position: Position, rules: Rules, spent: int) -> int | None:
        """:meth:`_deep_estimate` on a transient side table (SIDE_TABLE_SHARE of the table),
        so the proof's table survives it; its entries at least ``deep_move_depth`` deep then
        go into the proof's table, where they order the exact searches that follow."""
        s = self.searcher
        s.side_table(max(1, self.tt_mb // SIDE_TABLE_SHARE))
        try:
            return self._deep_estimate(position, rules, spent)
        finally:
            s.main_table(self.deep_move_depth)

    def _deep_estimate(self, position: Position, rules: Rules, spent: int) -> int | None:
        """The value of a depth-limited search of ``position``, deepened in steps of DEEP_STEP
        sowings on the current table (the pause's own: ``_mtdf``) while the next step, predicted
        from the growth of the last, keeps the whole deepening within DEEP_SHARE times ``spent``
        (the nodes of the paused proof); None when the budget runs out first."""
        s = self.searcher
        estimate, total, last, growth = None, 0, 0, DEEP_GROWTH
        for d in range(DEEP_STEP, HEURISTIC_MAX_DEPTH + 1, DEEP_STEP):
            if estimate is not None and total + last * growth > DEEP_SHARE * spent:
                break
            v, nodes, aborted, horizon = s.heuristic(position, rules, d, fresh=False)
            if aborted:
                return None
            if horizon == 0:  # no leaf was estimated: the value is exact
                return v
            # Depths the table already held cost next to nothing: they say little of growth.
            growth = min(max(nodes / last, 1.0), DEEP_GROWTH) if last else DEEP_GROWTH
            estimate, total, last = v, total + nodes, nodes
        return estimate

    def _reaches(self, line: _Line, rules: Rules, target: int) -> bool:
        """Whether a root move's value may reach ``target``: False once proven below it (its
        upper bound is then set), True when it may be as good (or the budget ran out)."""
        if line.upper < target:
            return False
        if line.lower >= target:
            return True
        if line.sign > 0:
            v = self.searcher.probe(line.result.after, rules, target - 1, target)
            if v is not None and v < target:
                line.upper = v
                return False
        else:
            v = self.searcher.probe(line.result.after, rules, -target, -target + 1)
            if v is not None and v > -target:
                line.upper = -v
                return False
        return True

    def _pv(
        self, position: Position, rules: Rules, first: _Line, exact: bool, limit: int
    ) -> list[list[Move]]:
        """A principal variation grouped by turns: proven by null-window tests along the way when
        the value is exact (stopping where the budget runs out), else the table's moves."""
        s = self.searcher
        line: list[MoveResult] = [first.result]
        value = first.sign * first.value  # the value of the child for its own mover
        node = first.result.after
        while len(line) < limit and not (exact and s.aborted) and outcome(node, rules) is None:
            if exact:
                step = self._proven_step(node, rules, value)
                if step is None:
                    break
                result, value = step
            else:
                code = s.table_move(node)
                if code is None:
                    break
                move: Move = SWAP if code == SWAP_CODE else code + 1
                if move not in legal_moves(node, rules):
                    break
                result = play(node, rules, move)
            line.append(result)
            node = result.after
        return group_turns(line)

    def _proven_step(
        self, node: Position, rules: Rules, value: int
    ) -> tuple[MoveResult, int] | None:
        s = self.searcher
        moves = legal_moves(node, rules)
        code = s.table_move(node)
        if code is not None:
            preferred: Move = SWAP if code == SWAP_CODE else code + 1
            if preferred in moves:
                moves.remove(preferred)
                moves.insert(0, preferred)
        for move in moves:
            result = play(node, rules, move)
            child = result.after
            if result.over:
                south, north = child.stores
                v = south - north if node.to_move is Side.SOUTH else north - south
                if v == value:
                    return result, 0
                continue
            if result.extra_turn:
                ok = s.test(child, rules, value)
                child_value = value
            else:
                ok = s.test(child, rules, -value + 1)
                ok = None if ok is None else not ok
                child_value = -value
            if ok is None:
                return None
            if ok:
                return result, child_value
        return None


def _code(move: Move) -> int:
    return int(SWAP_CODE) if move == SWAP else int(move) - 1


def _order(move: Move) -> int:
    return 99 if move == SWAP else int(move)


def with_deep_book(
    book: DeepBook,
    position: Position,
    rules: Rules,
    lines: list[_Line],
    root: tuple[int, int],
) -> tuple[int, int]:
    """The root's and every move's bounds narrowed by the deep book's proven ones (a
    budget longer than DEEP_BOOK_MS searched instead of answering from it)."""
    known = book.proven_bounds(position, rules)
    if known is None:
        return root
    (low, high), moves = known
    for line in lines:
        m_low, m_high = moves.get(_order(line.result.move), (-INFINITY, INFINITY))
        line.lower, line.upper = max(line.lower, m_low), min(line.upper, m_high)
    return max(root[0], low), min(root[1], high)
