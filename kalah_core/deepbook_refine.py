"""Narrowing the deep book's proven bounds at a start (``kalah book refine``).

A position's value is at least t as soon as one move's is, and at most t only when every
move's is. So a claim about the start ("value >= t" or "value <= t") unfolds through the book's
records into an AND/OR tree: where the claim's side moves, one move suffices; where the other
side moves, every move must be shown. Its leaves are the moves of the deepest records, each a
null-window test (``Searcher.probe``) of the position the move leads to: far cheaper than a
test at the start, and cheaper still the further its threshold is from the value.

The pass steps each side's target inwards from the start's bounds (``DISTANCES`` from its
estimate). For a target it runs rounds: every leaf test the tree needs, with a node cap that
doubles each round. Where one move suffices, the best-estimated move gets the round's cap and
the next an eighth of it (none below the first cap). Every test runs on
an emptied table, so its outcome is a function of (position, threshold, cap): a build is
reproducible, and a checkpoint of the outcomes resumes it. Each outcome narrows its move's
bounds (fail-soft: often past the threshold) and :func:`back_up` carries them to the start.
The side whose next round looks cheaper (twice its last open round) goes next.

The tests run in one session of an executor of :mod:`kalah_core.tasks` (the task kind
``deepbook.test``: local processes that live as long as the refinement, or ``kalah worker``
processes through the service's Redis queue). A pass through the tree takes the outcomes it
knows and collects the tests it lacks as if they ran out of their caps; the pass is then
undone, the collected tests run as one batch, and the pass is made again, until it lacks none.
That last pass is the one-process pass, test for test; the batches depend on nothing but the
outcomes, so with cold tables (below) any executor and any number of workers run the same
batches and write the same checkpoint (but for the tests ahead, below). A batch goes out
cheapest disproof first, as proof-number search would pick: the smallest cap first, then the
threshold furthest from its move's estimate (a test far from the value is cheap).

Workers a batch leaves idle run tests ahead (:data:`AHEAD_CAPS`): a test of the batch at its
next caps (twice, four times, eight times its cap), the tests the next rounds need if it runs
out. That is where a proof is serial: near the value, MTD(f)'s last claims come down to one
test whose cap doubles round after round (Kalah(6,4): 16 M to 128 M nodes of one move, two
thirds of the proof), each round a search from scratch on an emptied table. With a second
worker the rounds overlap: the big caps start while the small ones run, so the chain costs
about its last test instead of twice it. A test ahead is cancelled (its search interrupted,
no outcome kept) once its test of the batch answers within its cap. One that answers is held
apart, unseen by the passes, until a batch asks for it: then it counts at once, as if run
then. So the passes, the batches and the book are the one-process run's whatever the workers
(a pass that saw an outcome ahead would lack fewer tests, and its batches, and what they add
to the book, would depend on the timing). The checkpoint marks a test ahead (``"ahead":
true``) and repeats it unmarked when a batch takes it: a resumed run sees the outcomes the
batches saw, and a checkpoint without the mark (of earlier runs) resumes as it always did.
The one-process run runs no test ahead, nor does a warm one (below): on a warm table a
test re-run at twice its cap goes on from where the last stopped, so the chain of caps is no
longer serial, and a test ahead on another worker's table only searches its tree again
(Kalah(6,4) standard on 2 workers: 131.6 M nodes with tests ahead, 58.1 M without, as on 1).

Cold and warm tables. A refinement (by default), and ``kalah prove --cold``, runs every test on
an emptied table, so that each outcome is a pure function of its test: the batches, the
checkpoint and the book are the one-process run's, test for test, on any executor (above).
``kalah prove`` by default, and ``kalah book refine --warm``, keeps each worker's table warm
across the tests of its run (the task's ``warm`` token: a process's table is emptied when a
test of another run, or other work, comes): its entries are all exact searches' proven bounds,
sound for any later test of the same rules and databases, so a test re-run at twice its cap on
the same worker goes on from where the last one stopped, and later MTD(f) claims reuse the
earlier claims' trees, as the one-process solve's table does. A local session sends a move's
tests to the process that ran that move last (``group`` of :func:`kalah_core.tasks.task`);
``kalah worker``s through Redis likewise (``RedisSession``). And, as a long proof of the solver
pauses for a deep estimate (``Engine._mtdf``), a warm process deepens a heuristic estimate of a
move's position on a side table once the move's tests have cost it :data:`DEEPEN_AFTER` nodes
(and again at eight times as many): the estimate's deep entries order the exact searches that
follow (heuristic entries order moves, they never cut an exact search). Kalah(6,5)'s first
claim's test (20-seed database) took 768 M nodes on an emptied table; after an 8 M try and its
estimate, 17.5 M in all (HISTORY.md). A warm pass takes a decided verdict at any cap (a move's
cap changes from pass to pass as an AND node's first undecided move changes), and a running
test of a move and threshold the batch asks at another cap goes on rather than start again.

What stays determined, warm: every decided verdict ("value >= t" true or false, the bound it
gives) is a proven fact whatever table it ran on, so the proven bounds, and a finished proof's
value or claim, equal the one-process run's. What no longer does: whether a test ran out of
its cap, and so the batches, the checkpoint's lines and the node counts, depend on what its
worker ran before (one local process is still deterministic: one order of tests). A resumed
warm run replays its checkpoint's outcomes (facts, and the caps that ran out) and goes on with
tables that start empty.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TextIO, TypedDict, Unpack

from .deepbook import DeepRecord, DeepSection, deep_key, find_deep_key, key_position, lead
from .deepbook_build import _ENGINES, DeepBudget, _engine, back_up, move_test
from .errors import KalahError
from .game import legal_moves, play
from .moves import MoveResult
from .position import Position
from .rules import Rules
from .solver import MAX_THREADS
from .tasks import Executor, Interrupted, Json, LocalExecutor, Session, Task, task

DISTANCES = (40, 30, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2)
"""The start's targets, from its estimate, in order: each one proven makes the next the goal.
Steps of 2 seeds inside 30: a claim costs more the nearer the value, and a long proof lands
only what one run proves, so each run should be able to prove the next small step."""
WIDTH, ALTERNATIVE_SHIFT = 2, 3
"""Where one move suffices, the moves tried in a round (the best estimates first) and their
caps: the round's, then an eighth of it. An alternative costs about as much as the best move's
subtree, which may need every reply shown."""
TEST_KIND = "deepbook.test"
"""The task kind of a test (:func:`test_task`), on local processes or ``kalah worker``s."""
LOW, HIGH = "low", "high"
"""A claim's side: "value >= t" and "value <= t"."""
AHEAD_CAPS = 3
"""How many doublings of its cap ahead an idle worker runs a test of the batch (see the module
docstring)."""


@dataclass(frozen=True, slots=True)
class RefineBudget:
    """A refinement's budget: the first cap of a test (nodes), the nodes of all tests (None:
    until the time runs out; replayed outcomes count, so a resumed build stops where a whole
    one would), the table, the endgame databases (paths), and the threads of each test (one
    table: warm runs only, as the nodes a cap stops at then vary from run to run)."""

    first_nodes: int
    total_nodes: int | None = None
    tt_mb: int = 256
    databases: tuple[str, ...] = ()
    threads: int = 1


@dataclass(frozen=True, slots=True)
class _Edge:
    """A move of a record: ``value(move) = offset + sign * value(child)`` in future gains,
    where ``child`` is the record the move leads to (None: a leaf, tested)."""

    house: int
    result: MoveResult
    child: bytes | None
    offset: int
    sign: int


class _Stop(Exception):
    """The budget or the time ran out."""


Slot = tuple[str, int, int, int]
"""A test: (record key hex, house or 0 for the record's position, beta, cap)."""
Outcome = tuple[int | None, int]
"""A test's bound (future gains; None: it ran out of its cap) and its nodes."""


def leaf_test(
    rules: Rules,
    slot: Slot,
    tt_mb: int,
    databases: tuple[str, ...],
    warm: str | None = None,
    threads: int = 1,
) -> Outcome:
    """One test on an emptied table (this process's engine for the table and databases), so
    its outcome is a function of its inputs; with ``warm`` (a run's token), on the table the
    run's last test in this process left, and after a deep estimate of the searched position
    once its tests have cost this process :data:`DEEPEN_AFTER` nodes (see the module
    docstring); on ``threads`` threads sharing the table (warm only)."""
    key_hex, house, beta, cap = slot
    engine = _engine(rules, DeepBudget(0, 0, tt_mb, databases), warm, threads)
    if _STOPPED[0]:  # interrupted before its engine was there to interrupt
        raise Interrupted
    s = engine.searcher
    position = key_position(bytes.fromhex(key_hex), rules)
    diff = lead(position)
    result = None if house == 0 else play(position, rules, house)
    searched = position if result is None else result.after
    s.begin(searched, rules, 0.0, cap)
    move_depth = s.heuristic_move_depth
    try:
        if warm is not None and _deepen(engine, rules, warm, (key_hex, house), searched, cap):
            s.heuristic_move_depth = min(move_depth, engine.deep_move_depth)
        if result is None:
            bound = s.probe(position, rules, beta + diff - 1, beta + diff)
        else:
            bound = move_test(engine, rules, result, beta + diff)
    finally:
        s.heuristic_move_depth = move_depth
    if warm is not None:
        _SPENT[1][(key_hex, house)][0] += s.nodes
    if s.interrupted:  # cancelled (a test ahead no longer wanted): no outcome
        raise Interrupted
    return (None if bound is None else bound - diff), s.nodes


DEEPEN_AFTER = 8_000_000
"""A warm run's tests of one move that cost this process this many nodes make a long proof:
the next one first deepens an estimate of the move's position (see :func:`_deepen`)."""
_SPENT: tuple[list[str | None], dict[tuple[str, int], list[int]]] = ([None], {})
"""The warm run (its token) and, by move (key hex, house), the nodes its tests cost this
process and the nodes they had cost at the last deep estimate (0: none yet)."""


def _deepen(
    engine: Any, rules: Rules, warm: str, move: tuple[str, int], position: Any, cap: int
) -> bool:
    """As a long proof of the solver pauses for a deep estimate (``Engine._mtdf``): once the
    tests of ``move`` have cost this process DEEPEN_AFTER nodes, and again each time they
    have cost eight times as much as at the last one, a depth-limited search of ``position``
    on a side table (at most ``DEEP_SHARE`` times those nodes), whose entries
    ``deep_move_depth`` sowings deep order the exact searches that follow (heuristic entries
    order moves, never cut an exact search: every verdict stays proven). A move new to this
    process (a resumed run, or a move another worker ran so far) counts half its test's cap
    as spent: a cap past the first is there because the move's tests ran out before, and
    its first test here would otherwise search the whole cap cold before any estimate.
    Whether the move's position has an estimate (the test then lets its moves order the
    search)."""
    if _SPENT[0][0] != warm:
        _SPENT[0][0] = warm
        _SPENT[1].clear()
    spent = _SPENT[1].setdefault(move, [0, 0])
    done = spent[0] if spent[0] else cap // 2
    if done >= max(DEEPEN_AFTER, 8 * spent[1]):
        engine.deep_estimate_aside(position, rules, done)
        spent[1] = done
    return bool(spent[1] > 0)


_STOPPED = [False]


def _interrupt(on: bool) -> None:
    """Interrupt the test running in this process (another thread calls it), or clear that
    before the next test."""
    _STOPPED[0] = on
    for engine in list(_ENGINES.values()):
        if on:
            engine.searcher.interrupt()
        else:
            engine.searcher.clear_interrupt()


def _group(params: dict[str, Json], item: Json) -> Json:
    """A warm test's move (key hex, house): its tests go to the process whose table holds the
    move's tree (none for a cold test: any process is as good)."""
    return [item[0], item[1]] if params.get("warm") else None


@task(TEST_KIND, interrupt=_interrupt, group=_group)
def test_task(params: dict[str, Json], items: Sequence[Json]) -> Iterator[Json]:
    """The outcomes ``[bound, nodes]`` of tests (``[key hex, house, beta, cap]``) under
    ``params``: rules, table, databases, ``warm`` (a run's token: the table kept from one of
    its tests to the next; absent or null: emptied for each) and ``threads`` (of each test,
    sharing the table, at most the process's cores; absent: 1)."""
    rules = Rules.from_json(params["rules"])
    databases = tuple(params["databases"])
    warm = params.get("warm")
    threads = max(1, min(int(params.get("threads", 1)), len(os.sched_getaffinity(0)), MAX_THREADS))
    for key_hex, house, beta, cap in items:
        slot = (key_hex, house, beta, cap)
        yield list(leaf_test(rules, slot, params["tt_mb"], databases, warm, threads))


def _decided(lower: int, upper: int, side: str, t: int) -> bool | None:
    """Whether bounds [lower, upper] decide the claim (side, t), or None."""
    if side == LOW:
        return True if lower >= t else False if upper < t else None
    return True if upper <= t else False if lower > t else None


class Refiner:
    """One refinement of a section's bounds at its start (see the module docstring)."""

    whole_records = True
    """Test "value <= t" of a record whose moves are all leaves by one test of the record's
    position (one table for all its moves) rather than one a move (which run in parallel)."""

    def __init__(
        self,
        section: DeepSection,
        budget: RefineBudget,
        *,
        checkpoint: str | os.PathLike[str] | None = None,
        until: float | None = None,
        stop: threading.Event | None = None,
        stream: TextIO | None = None,
        executor: Executor | None = None,
        root: bytes | None = None,
        warm: bool = False,
        sides: Sequence[str] = (LOW, HIGH),
    ) -> None:
        self.rules = section.rules
        if budget.threads > 1 and not warm:
            raise KalahError(
                "threads share a warm table: not with cold tests (kalah prove --cold, "
                "kalah book refine without --warm)"
            )
        # A warm run's token: its tests keep their process's table (see the module docstring).
        self.warm = uuid.uuid4().hex if warm else None
        self.sides = tuple(sides)  # the start's bounds a run narrows
        self.section = section
        self.budget = budget
        self.records = back_up(self.rules, section.records)
        self.until = until
        self.stop = stop
        self.stream = stream or sys.stderr
        self.path = Path(checkpoint) if checkpoint else None
        self.executor: Executor = executor or LocalExecutor(1)
        self.outcomes: dict[Slot, Outcome] = {}
        self.spent = 0  # nodes of every test, replayed ones included
        self.searched = 0  # nodes searched for this refinement (by any worker)
        self.tests = 0
        self.pending: list[Slot] = []  # the tests the current pass lacks
        self.ahead: dict[Slot, Outcome] = {}  # run ahead, not asked for by a batch yet
        # Decided outcomes by (key hex, house, beta), whatever their cap: a warm pass takes them.
        self.verdicts: dict[tuple[str, int, int], Outcome] = {}
        self._stack = ExitStack()
        self._session: Session | None = None
        self._slots: list[Slot] = []  # the tests submitted, by their index in the session
        self._running: dict[Slot, int] = {}  # submitted, not answered nor cancelled
        self._batch: set[Slot] = set()
        self._edges: dict[bytes, list[_Edge]] = {}
        self.root = root or deep_key(Position.start(self.rules), self.rules)
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    raw = json.loads(line)
                    if raw["rules"] == self.rules.key:
                        slot = (raw["key"], raw["house"], raw["beta"], raw["cap"])
                        found = self.ahead if raw.get("ahead") else self.outcomes
                        found[slot] = (raw["bound"], raw["nodes"])
                        if raw["bound"] is not None:
                            self.verdicts[slot[:3]] = (raw["bound"], raw["nodes"])
                except (ValueError, TypeError, KeyError):
                    continue  # a torn last line

    # The tree

    def edges(self, key: bytes) -> list[_Edge]:
        found = self._edges.get(key)
        if found is None:
            position = key_position(key, self.rules)
            diff = lead(position)
            found = []
            for move in legal_moves(position, self.rules):
                result = play(position, self.rules, move)
                child = None
                if not result.over and not result.after.swap_available:
                    child = find_deep_key(result.after, self.rules)
                    child = child if child in self.records else None
                c = lead(result.after)
                if result.extra_turn:
                    found.append(_Edge(int(move), result, child, c - diff, 1))
                else:
                    found.append(_Edge(int(move), result, child, -c - diff, -1))
            self._edges[key] = found
        return found

    def holds(self, key: bytes, side: str, t: int, cap: int) -> bool | None:
        """Whether the record ``key``'s value is >= t (LOW) or <= t (HIGH): proven, disproven,
        or None (a test needed ran out of its cap)."""
        record = self.records[key]
        decided = _decided(record.lower, record.upper, side, t)
        if decided is not None:
            return decided
        estimates = {m.house: m.estimate for m in record.moves}
        # The likeliest to hold first where one move suffices, the likeliest to fail where all
        # must hold: both the best estimates first.
        edges = sorted(self.edges(key), key=lambda e: (-estimates[e.house], e.house))
        if side == LOW:
            unknown = 0
            for edge in edges:
                child_cap = cap >> (ALTERNATIVE_SHIFT * unknown)
                if unknown >= WIDTH or child_cap < self.budget.first_nodes:
                    return None
                got = self.move_holds(key, edge, side, t, child_cap)
                if got:
                    return True
                unknown += got is None
            return None if unknown else False
        leaves = [e for e in edges if e.child is None and not e.result.over]
        if self.whole_records and len(leaves) == len(edges) > 1:
            return self.record_test(key, t, cap)
        unknown = 0
        for edge in edges:
            # Warm, the likeliest to fail gets the round's cap and the others an eighth (none
            # below the first cap): a claim that fails (MTD(f)'s, until the value) fails on
            # that move, as a search of the record would, and the others' tests, shown later
            # on their warm tables, cost little at the last rounds.
            shift = ALTERNATIVE_SHIFT if self.warm is not None and unknown else 0
            child_cap = max(cap >> shift, min(cap, self.budget.first_nodes))
            got = self.move_holds(key, edge, side, t, child_cap)
            if got is False:
                return False
            unknown += got is None
        return None if unknown else True

    def move_holds(self, key: bytes, edge: _Edge, side: str, t: int, cap: int) -> bool | None:
        bound = next(m for m in self.records[key].moves if m.house == edge.house)
        decided = _decided(bound.lower, bound.upper, side, t)
        if decided is not None:
            return decided
        if edge.child is not None:
            flipped = side if edge.sign > 0 else (HIGH if side == LOW else LOW)
            return self.holds(edge.child, flipped, edge.sign * (t - edge.offset), cap)
        if edge.result.over:
            return None  # pragma: no cover - a record holds an ended game's value exactly
        return self.test(key, edge, side, t, cap)

    def test(self, key: bytes, edge: _Edge, side: str, t: int, cap: int) -> bool | None:
        """The leaf test "value(move) >= beta" (beta = t, or t + 1 for HIGH) within ``cap``
        nodes; its bound goes into the book."""
        beta = t if side == LOW else t + 1
        bound = self._outcome(key, edge.house, beta, cap)
        if bound is None:
            return None
        if bound >= beta:
            self._narrow(key, {edge.house}, lower=bound)
        else:
            self._narrow(key, {edge.house}, upper=bound)
        return bound >= beta if side == LOW else bound < beta

    def record_test(self, key: bytes, t: int, cap: int) -> bool | None:
        """ "value <= t" where every move is a leaf: one test of the record's own position (its
        moves share the table) instead of one a move. Its upper bound bounds every move."""
        bound = self._outcome(key, 0, t + 1, cap)
        if bound is None:
            return None
        if bound > t:
            return False  # which move is that good is not known: no bound to keep
        self._narrow(key, {m.house for m in self.records[key].moves}, upper=bound)
        return True

    def _narrow(
        self, key: bytes, houses: set[int], lower: int | None = None, upper: int | None = None
    ) -> None:
        record = self.records[key]
        moves = tuple(
            replace(
                m,
                lower=m.lower if lower is None else max(m.lower, lower),
                upper=m.upper if upper is None else min(m.upper, upper),
            )
            if m.house in houses
            else m
            for m in record.moves
        )
        low, high = max(m.lower for m in moves), max(m.upper for m in moves)
        depth = None if low == high else record.depth
        self.records[key] = DeepRecord(key, depth, low, high, moves, record.pv)
        self.records = back_up(self.rules, self.records)

    def _outcome(self, key: bytes, house: int, beta: int, cap: int) -> int | None:
        """The bound (future gains) from the test "value >= beta" of the move ``house`` of the
        record ``key`` (0: of the record's position) within ``cap`` nodes, or None when it ran
        out or the pass lacks it (then it joins ``pending``)."""
        slot = (key.hex(), house, beta, cap)
        total = self.budget.total_nodes
        # A speculative pass (past a lacking test) checks no budget; replayed outcomes count,
        # so a resumed build stops where a whole one did.
        if not self.pending and total is not None and self.spent >= total:
            raise _Stop
        outcome = self.outcomes.get(slot)
        if outcome is None and self.warm is not None:
            # A verdict is a fact at any cap: warm, a move's cap changes from pass to pass (an
            # AND's likeliest-to-fail is its first undecided move), so a test decided at one
            # cap is not searched again at another.
            outcome = self.verdicts.get(slot[:3])
        if outcome is None:
            self.pending.append(slot)
            return None
        bound, nodes = outcome
        self.spent += nodes
        self.tests += 1
        return bound

    def decide(self, side: str, t: int, cap: int) -> bool | None:
        """``holds`` at the root, its missing tests run in batches on the executor until a pass
        lacks none (see the module docstring); the bounds it proves stay in the book."""
        while True:
            saved = (dict(self.records), self.spent, self.tests)
            self.pending = []
            got = self.holds(self.root, side, t, cap)
            if not self.pending:
                return got
            batch, self.pending = self.pending, []
            self.records, self.spent, self.tests = saved
            if self.warm is None:
                self._run(sorted(dict.fromkeys(batch), key=self._cost))
            else:  # the pass's order (the likeliest to decide first), smallest caps first
                ordered = sorted(dict.fromkeys(batch), key=lambda slot: slot[3])
                self._run(ordered, lambda: self._lacking(side, t, cap))

    def _lacking(self, side: str, t: int, cap: int) -> set[Slot]:
        """The tests a pass of ``holds`` at the root lacks now (the pass undone)."""
        saved = (dict(self.records), self.spent, self.tests)
        self.pending = []
        try:
            self.holds(self.root, side, t, cap)
            return set(self.pending)
        finally:
            self.pending = []
            self.records, self.spent, self.tests = saved

    def _cost(self, slot: Slot) -> tuple[int, int]:
        """A test's place in its batch: the smallest cap, then the threshold furthest from its
        move's estimate (the cheapest disproof first)."""
        key_hex, house, beta, cap = slot
        record = self.records[bytes.fromhex(key_hex)]
        estimate = next((m.estimate for m in record.moves if m.house == house), record.estimate)
        return cap, -abs(beta - estimate)

    def _open(self) -> Session:
        if self._session is None:
            work = Task(
                TEST_KIND,
                {
                    "rules": self.rules.to_json(),
                    "tt_mb": self.budget.tt_mb,
                    "databases": list(self.budget.databases),
                    **({"warm": self.warm} if self.warm else {}),
                    **({"threads": self.budget.threads} if self.budget.threads > 1 else {}),
                },
            )
            self._session = self._stack.enter_context(self.executor.session(work))
        return self._session

    def close(self) -> None:
        """Cancel the tests still running and end the executor's session (its processes)."""
        if self._session is not None:
            for index in self._running.values():
                self._session.cancel(index)
        self._running.clear()
        self._session = None
        self._stack.close()

    def _ahead(self, batch: list[Slot]) -> list[Slot]:
        """The tests ahead of ``batch`` (see the module docstring): each test not answered
        within its cap, at its next caps, nearest first."""
        ahead: list[Slot] = []
        if self.warm is not None:
            return ahead
        for shift in range(1, AHEAD_CAPS + 1):
            for key_hex, house, beta, cap in batch:
                known = self.outcomes.get((key_hex, house, beta, cap))
                if known is not None and known[0] is not None:
                    continue
                slot = (key_hex, house, beta, cap << shift)
                if slot not in self.outcomes and slot not in self.ahead:
                    ahead.append(slot)
        return ahead

    def _submit(self, session: Session, slot: Slot) -> None:
        self._running[slot] = len(self._slots)
        session.submit(len(self._slots), list(slot))
        self._slots.append(slot)

    def _run(self, batch: list[Slot], lacking: Callable[[], set[Slot]] | None = None) -> None:
        """Run ``batch`` in the executor's session, keeping (and checkpointing) each outcome as
        it comes, with tests ahead on the workers it leaves idle; the time running out stops
        it (the outcomes in hand are kept). With ``lacking`` (a warm run: its batches are not
        the one-process run's anyway), the pass is made again as outcomes come: the batch's
        tests it no longer lacks are dropped (cancelled if running: a claim one outcome
        decides stops there), and the batch ends once the pass lacks none of it or others."""
        if self._stopped():
            raise _Stop
        session = self._open()
        self._batch = set(batch)
        for slot in batch:
            if slot in self.ahead:  # run ahead: its outcome counts now
                self._keep(slot, *self.ahead.pop(slot), ran=False)
        while True:
            ahead = self._ahead(batch)
            wanted = self._batch.union(ahead)
            # Warm, a running test of a wanted move and threshold at another cap goes on: its
            # verdict is the batch's (self.verdicts), and starting it again loses its search.
            tests = {slot[:3] for slot in self._batch} if self.warm is not None else set()
            for slot in [s for s in self._running if s not in wanted and s[:3] not in tests]:
                session.cancel(self._running.pop(slot))
            busy = {slot[:3] for slot in self._running} if self.warm is not None else set()
            for slot in batch:
                if slot not in self.outcomes and slot not in self._running and slot[:3] not in busy:
                    self._submit(session, slot)
            for slot in ahead:
                if session.running() >= session.capacity:
                    break
                if slot not in self._running:
                    self._submit(session, slot)
            if all(slot in self.outcomes for slot in batch):
                return
            answered = session.wait(1.0)
            for index, (bound, nodes) in answered:
                self._keep(self._slots[index], bound, nodes)
            if self._stopped():
                raise _Stop
            if lacking is not None and answered:
                needed = lacking()
                if not needed or not needed <= self._batch:
                    return  # decided, or the pass lacks other tests now: a new batch
                batch = [slot for slot in batch if slot in needed]
                self._batch = set(batch)

    def _stopped(self) -> bool:
        """Whether the run is to end now: its deadline passed, or its stop event set."""
        deadline = self.until is not None and time.time() >= self.until
        return deadline or (self.stop is not None and self.stop.is_set())

    def _keep(self, slot: Slot, bound: int | None, nodes: int, ran: bool = True) -> None:
        """A test's outcome (``ran``: answered now, else taken from those ahead), for the
        passes if its batch asked for it, else held ahead; in the checkpoint and the progress
        stream."""
        self._running.pop(slot, None)
        if ran:
            self.searched += nodes
        # Warm, no test runs ahead: one that answers unasked is a running test of a move and
        # threshold the batch asked at another cap (see _run), an outcome like any other.
        asked = slot in self._batch or self.warm is not None
        if slot in self.outcomes or (not asked and slot in self.ahead):
            return  # pragma: no cover - a test cancelled, submitted again, answered twice
        (self.outcomes if asked else self.ahead)[slot] = (bound, nodes)
        if bound is not None:
            self.verdicts.setdefault(slot[:3], (bound, nodes))
        if self.path is not None:
            line = dict(zip(("key", "house", "beta", "cap"), slot, strict=True))
            record = {"rules": self.rules.key, **line, "bound": bound, "nodes": nodes}
            if not asked:
                record["ahead"] = True
            with open(self.path, "a") as out:
                out.write(json.dumps(record) + "\n")
        if not ran:
            return
        key_hex, house, beta, cap = slot
        what = f"move {house}" if house else "itself"
        self.stream.write(
            f"  {key_hex} {what} >= {beta:+d}, cap {cap:,}: "
            f"{'out of budget' if bound is None else f'{bound:+d}'}, {nodes:,} nodes"
            f"{'' if asked else ' (ahead)'}\n"
        )
        self.stream.flush()

    def apply_known(self) -> None:
        """Every bound the checkpoint holds, in the book: those the pass did not reach again
        (a resumed checkpoint may hold outcomes of another order) are proven all the same."""
        for (key_hex, house, beta, _), (bound, _) in sorted(self.outcomes.items()):
            key = bytes.fromhex(key_hex)
            if bound is None or key not in self.records:
                continue
            if house == 0:
                if bound < beta:  # the record's value, so every move's, is at most bound
                    self._narrow(key, {m.house for m in self.records[key].moves}, upper=bound)
            elif bound >= beta:
                self._narrow(key, {house}, lower=bound)
            else:
                self._narrow(key, {house}, upper=bound)

    # The pass

    def target(self, side: str) -> int | None:
        """The next target of ``side`` at the start: the furthest rung of ``DISTANCES``
        inside its bounds, of the values' parity (None: nothing left)."""
        record = self.records[self.root]
        parity = (self.rules.total_seeds - lead(key_position(self.root, self.rules))) % 2
        for distance in DISTANCES:
            if side == HIGH:
                t = record.estimate + distance
                t -= (t - parity) % 2
                if t < record.upper:
                    return t
            else:
                t = record.estimate - distance
                t += (t - parity) % 2
                if t > record.lower:
                    return t
        return None

    def run(self) -> DeepSection:
        """Refine until every side is done, or the budget or the time runs out; the section
        with the narrowed bounds (and the pass in its ``build``)."""
        started = time.perf_counter()
        caps = {LOW: self.budget.first_nodes, HIGH: self.budget.first_nodes}
        # A side's next round costs about twice its last open one: the cheaper goes first.
        expect = {LOW: 0, HIGH: 0}
        done = {side for side in (LOW, HIGH) if side not in self.sides}
        try:
            while True:
                goals = {s: self.target(s) for s in (HIGH, LOW) if s not in done}
                open_sides = [s for s, t in goals.items() if t is not None]
                if not open_sides:
                    break
                side = min(open_sides, key=lambda s: (expect[s], caps[s], s == LOW))
                t = goals[side]
                assert t is not None
                nodes = self.spent
                got = self.decide(side, t, caps[side])
                record = self.records[self.root]
                word = {True: "proven", False: "disproven", None: "open"}[got]
                self.stream.write(
                    f"{self.rules.key} start: value {'>=' if side == LOW else '<='} {t:+d} "
                    f"with caps {caps[side]:,}: {word}; bounds [{record.lower:+d}, "
                    f"{record.upper:+d}], {self.spent:,} nodes in {self.tests:,} tests, "
                    f"{time.perf_counter() - started:.0f} s\n"
                )
                self.stream.flush()
                if got is None:
                    caps[side] *= 2
                    expect[side] = 2 * (self.spent - nodes)
                elif got:
                    caps[side] = self.budget.first_nodes
                    expect[side] = 0
                else:
                    done.add(side)
        except _Stop:
            pass
        finally:
            self.close()
        self.apply_known()
        before = self.section.records[self.root]
        after = self.records[self.root]
        refine: dict[str, Any] = {
            **asdict(self.budget),
            "databases": [os.path.basename(p) for p in self.budget.databases],
            "warm": self.warm is not None,
            "nodes": self.spent,
            "tests": self.tests,
            "caps": caps,
            "seconds": round(time.perf_counter() - started, 1),
            "searched": self.searched,
            "start": {"before": [before.lower, before.upper], "after": [after.lower, after.upper]},
        }
        passes = [*self.section.build.get("refine", []), refine]
        build = {**self.section.build, "refine": passes}
        return DeepSection(self.rules, self.section.sowings, dict(self.records), build)


class RunOptions(TypedDict, total=False):
    """How a refinement runs: its checkpoint, its deadline (``until``, or ``stop`` once set: a
    signal's handler ends the run as the deadline does), where its progress goes, the
    executor of its tests (default: this process), whether its tests keep their worker's table
    (``warm``; default: an emptied table for each), and the start's bounds it narrows
    (``sides``: ``LOW``, ``HIGH`` or both, the default)."""

    checkpoint: str | os.PathLike[str] | None
    until: float | None
    stop: threading.Event | None
    stream: TextIO | None
    executor: Executor | None
    warm: bool
    sides: Sequence[str]


def refine_section(
    section: DeepSection, budget: RefineBudget, **options: Unpack[RunOptions]
) -> DeepSection:
    """``section`` with its start's bounds narrowed (see the module docstring)."""
    return Refiner(section, budget, **options).run()
