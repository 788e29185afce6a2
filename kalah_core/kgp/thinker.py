"""The agent's search thread: for each state a quick move, then deeper ones, then proofs,
then pondering on the opponent's time (see :mod:`kalah_core.kgp.agent`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import KalahError
from ..game import legal_moves, play
from ..position import Position, Side
from ..results import INFINITY, MoveValue
from ..rules import Rules
from ..solver import Engine
from .experience import MEMORY_DRAW, MEMORY_LOSS, Experience
from .protocol import format_command, kgp_rules
from .records import legal_houses

log = logging.getLogger("kalah.kgp")

QUICK_DEPTH = 2
"""The depth of the search behind the first move sent for a state."""
QUICK_DELAY_S = 0.005
"""The first move waits this long after its state: go-kgp files a state under its id only after
sending it, and drops a move that comes sooner ("No state associated with id")."""
HEURISTIC_SHARE = 0.6
"""Of a move's time, for the depth-limited search before the proofs..."""
PROVE_MAX_SEEDS = 40
"""... when at most this many seeds are left in houses; with more, no proof fits in a move's
time (Kalah(6,6)'s start takes weeks), and the depth-limited search has all of it."""
RESULT_SHARE = 0.5
"""Of the proofs' time on a 6-house board with a database, for the result under ``kalah``."""
RESULT_MAX_SEEDS = 2
"""... tried only when the seeds in houses are at most this many times the database's bound."""
MARGIN_S = 0.1
"""Time kept back from ``--time-per-move`` for the network (at most 10 % of it)."""
PONDER_S = 20.0
"""The longest the agent thinks on the opponent's time for one position."""
REINTERRUPT_S = 0.02
"""After a ``stop``, the search is interrupted again this much later (see Thinker._halt)."""

TRAP_WINDOW = 2
"""When the best estimate is a loss (and no move is proven to win), moves estimated within this
many seeds of it are weighed by how likely a shallower opponent is to answer them badly; when
the best is a proven draw, the moves proven to draw are."""
TRAP_SHARE = 0.3
"""The last share of the depth-limited search's time goes to that weighing, when it applies."""
TRAP_SHALLOWER = (3, 5, 7)
"""The opponent is modelled as searching this many sowings less deep than the agent reached
(at least TRAP_MIN_DEPTH): one vote per depth and evaluation for its reply..."""
TRAP_MIN_DEPTH = 2
TRAP_EVALS = (0, 1)
"""... with two of the engine's evaluations: the store difference alone (0, a simple bot's) and
the one that also counts the seeds on each side (1, the agent's own on up to 6 houses). The
features (2, the agent's own on 7 houses and more) were not tried here."""
TRAP_WEIGHT = 0.5
"""A candidate's score: its estimate plus this times the mean gain over those votes (what a
reply that is not the best gives the agent beyond the estimate, by the agent's deep search)."""
TRAP_MIN_GAIN = 2
"""... counted only when that mean is at least this many seeds: smaller ones are the noise of
estimates from searches of different depths, not a chance."""

TRAP_TT_MB = 4
"""The table of the shallow searches: its own, so that no deep entry informs them."""


WIN, UNKNOWN, LOSS = 2, 1, 0


@dataclass
class Turn:
    """One turn to answer: a ``state`` the server sent (or, pondering, the position the
    agent's move left)."""

    id: int | None
    position: Position
    send: Callable[[str], None]
    received: float
    stop: threading.Event = field(default_factory=threading.Event)
    sent: int | None = None
    lower: int | None = None
    upper: int | None = None
    yielded: bool = False
    ponder: bool = False
    """Not a state: thinking on the opponent's time (see Thinker._ponder)."""
    value: int | None = None
    """The value of the move sent last (proven, or estimated)."""


@dataclass
class Candidate:
    """A legal move of the state being answered: its estimate, its proven bounds and what
    else weighs in the choice (the result without majority, traps, earlier games)."""

    move: int
    value: int = 0
    lower: int = -INFINITY
    upper: int = INFINITY
    result: int = UNKNOWN  # from the search without majority (WIN, UNKNOWN, LOSS)
    trap: float = 0.0
    """What the opponent-may-err weighing adds to the estimate (0 unless it ran)."""
    memory: float = 0.0
    """What the results of earlier games from this position take off (see Experience)."""
    won_before: bool = False
    """A game through this move was won: play it again (see Experience)."""

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    @property
    def outcome(self) -> int:
        if self.lower > 0 or self.result == WIN:
            return WIN
        if self.upper < 0 or self.result == LOSS:
            return LOSS
        return UNKNOWN

    def key(self) -> tuple[int, bool, float, bool, int]:
        value = min(max(self.value, self.lower), self.upper)
        won_before = self.won_before and self.outcome == UNKNOWN
        return (self.outcome, won_before, value + self.trap + self.memory, self.exact, -self.move)


class Thinker:
    """The search thread: answers one state at a time on a warm table. At most one state
    waits: the agent plays one game at a time and the server asks about one position at a time,
    so a newer state makes any waiting one stale (and a flood of states costs one slot, not a
    queue). A send that fails (the connection closed) ends its job, never the thread."""

    def __init__(
        self, engine: Engine, time_per_move: float, result_db: bool, trap: bool = False
    ) -> None:
        self.engine = engine
        self.trap = trap
        """Weigh the opponent's chances to err when losing (see _weigh_traps)."""
        self.shallow = Engine(tt_mb=TRAP_TT_MB, threads=1)
        self.experience: Experience | None = None
        """Earlier games' results (see Experience), when the agent keeps them."""
        self.time_per_move = time_per_move
        self.result_db = result_db
        self.current: Turn | None = None
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._pending: Turn | None = None
        """The latest state not yet taken up (a newer one replaces it)."""
        self._closing = False
        self._quiet = False
        """No pondering until the next state (after the server's goodbye, or a stop_all)."""
        self.on_start: Callable[[Turn, Rules], None] = lambda job, rules: None
        self.on_done: Callable[[Turn, Rules], None] = lambda job, rules: None
        self.thread = threading.Thread(target=self._run, name="kgp-thinker", daemon=True)
        self.thread.start()

    def submit(self, job: Turn) -> None:
        with self.lock:
            if self.current is not None:
                self._halt(self.current)
            if self._pending is not None:
                log.debug("state %s superseded by state %s", self._pending.id, job.id)
            # under the lock: a ponder starting now sees it (_ponder)
            self._pending = job
            self._quiet = False
            self._wake.notify()

    def stop(self, ref: int | None) -> None:
        """The server's ``stop`` for the state ``ref`` (searched, or still waiting)."""
        with self.lock:
            if self.current is not None and self.current.id == ref:
                self._halt(self.current)
            if self._pending is not None and self._pending.id == ref:
                self._pending = None

    def stop_all(self) -> None:
        """Stop the search, drop the waiting state, and think no more until the next one."""
        with self.lock:
            self._pending = None
            self._quiet = True
            if self.current is not None:
                self._halt(self.current)

    def close(self) -> None:
        self.stop_all()
        with self.lock:
            self._closing = True
            self._wake.notify()
        self.thread.join(timeout=60)

    def _halt(self, job: Turn) -> None:
        if job.stop.is_set():  # halted before: its re-interrupt is on its way (one timer)
            return
        job.stop.set()
        self.engine.interrupt()
        self.shallow.interrupt()
        # An analysis that starts just now clears the interrupt: interrupt it again then.
        again = threading.Timer(REINTERRUPT_S, self._interrupt_again, (job,))
        again.daemon = True
        again.start()

    def _interrupt_again(self, job: Turn) -> None:
        with self.lock:
            if self.current is job:
                self.engine.interrupt()
                self.shallow.interrupt()

    def idle(self) -> bool:
        """No state is being answered or waiting (pondering is idle)."""
        current = self.current
        return (current is None or current.ponder) and self._pending is None

    def _next(self, wait: bool) -> Turn | None:
        """The waiting state, now current (None: none, or closing); waits for one if
        ``wait``."""
        with self.lock:
            while wait and self._pending is None and not self._closing:
                self._wake.wait()
            if self._closing:
                return None
            job, self._pending = self._pending, None
            self.current = job
            return job

    def _run(self) -> None:
        ponder: tuple[Position, Rules] | None = None
        while True:
            if ponder is not None:
                job = self._next(wait=False)
                if job is None:
                    if self._closing:
                        return
                    if not self._quiet:
                        self._ponder(*ponder)
                    ponder = None
                    continue
            else:
                job = self._next(wait=True)
            if job is None:
                return
            rules: Rules | None = None
            try:
                rules = kgp_rules(job.position)
                self.think(job, rules)
            except KalahError as error:  # a board the engine cannot take: a plain legal move
                log.warning("state %s: %s; playing without search", job.id, error)
                self._send(job, fallback_move(job.position), final=True)
            except Exception:  # never leave a state unanswered
                log.exception("state %s: search failed", job.id)
                self._send(job, fallback_move(job.position), final=True)
            finally:
                with self.lock:
                    self.current = None
                if rules is not None and job.sent is not None:
                    try:
                        self.on_done(job, rules)
                        after = play(job.position, rules, job.sent)
                        if not after.over and not after.extra_turn:
                            ponder = (after.after, rules)
                    except Exception:
                        log.exception("game record")

    def _ponder(self, position: Position, rules: Rules) -> None:
        """Think on the opponent's time: deepen on the position after the agent's move until
        the next state comes (or PONDER_S), filling the table that state's search starts
        from."""
        job = Turn(None, position, lambda line: None, time.monotonic(), ponder=True)
        with self.lock:
            if self._pending is not None or self._quiet or self._closing:
                return
            self.current = job
        try:
            end = job.received + PONDER_S
            depth = QUICK_DEPTH
            while not job.stop.is_set() and time.monotonic() < end:
                left = (end - time.monotonic()) * 1000.0
                a = self.engine.analyse(position, rules, depth=depth, time_ms=left, pv_limit=1)
                if job.stop.is_set() or a.exact or (a.depth or 0) < depth:
                    break
                depth += 1
        except KalahError:
            pass
        finally:
            with self.lock:
                self.current = None

    def _send(self, job: Turn, move: int, *, final: bool = False) -> None:
        if job.stop.is_set() or job.yielded or move not in legal_houses(job.position):
            return
        try:
            if move != job.sent or final:
                # The final move goes out again before ``yield``: go-kgp files a state under
                # its id only after sending it, and answers a move that comes sooner "No state
                # associated with id", dropping it.
                job.send(format_command("move", move, ref=job.id))
                job.sent = move
            if final and not job.yielded:
                job.send(format_command("yield", ref=job.id))
                job.yielded = True
        except OSError as error:  # the connection closed: nobody waits for this state now
            log.warning("state %s: cannot send (%s); dropping it", job.id, error)
            job.stop.set()

    def think(self, job: Turn, rules: Rules) -> None:
        position = job.position
        moves = [m for m in legal_moves(position, rules) if isinstance(m, int)]
        if not moves:
            return
        if len(moves) == 1:
            self._send(job, moves[0], final=True)
            self.on_start(job, rules)
            return
        engine = self.engine
        deadline = job.received + self.time_per_move - min(MARGIN_S, self.time_per_move / 10)
        quick = engine.analyse(position, rules, depth=QUICK_DEPTH, pv_limit=1)
        lines = {m: Candidate(m) for m in moves}
        self._merge(lines, quick.moves)
        # The deep book's record, where it holds the state: its estimates stand until a search
        # here reaches deeper than its depth (its bounds are proven, as any).
        book = engine.deep_book.analysis(position, rules) if engine.deep_book else None
        if book is not None:
            self._merge(lines, book.moves)
        time.sleep(max(0.0, job.received + QUICK_DELAY_S - time.monotonic()))
        self._send(job, self._best(lines, job))
        # The game record, after the first move is out: a game the opponent ended is closed
        # only now, as this state begins the next, so its result reaches the experience here.
        self.on_start(job, rules)
        if self.experience is not None:
            for move, result in self.experience.best(position).items():
                if move in lines:
                    lines[move].won_before = result == "win"
                    lines[move].memory = {"win": 0.0, "draw": -MEMORY_DRAW}.get(
                        result, -MEMORY_LOSS
                    )
            self._send(job, self._best(lines, job))

        def left_ms(until: float) -> float:
            return (until - time.monotonic()) * 1000.0

        # 2. deepen (and weigh the opponent's chances to err, when losing)
        seeds = sum(position.south) + sum(position.north)
        share = HEURISTIC_SHARE if seeds <= PROVE_MAX_SEEDS else 1.0
        heuristic_end = job.received + (deadline - job.received) * share
        trap_start = job.received + (heuristic_end - job.received) * (1.0 - TRAP_SHARE)
        depth = QUICK_DEPTH + 1
        stages = [trap_start, heuristic_end] if self.trap else [heuristic_end]
        for stage, until in enumerate(stages):
            while not job.stop.is_set() and left_ms(until) > 1:
                a = engine.analyse(position, rules, depth=depth, time_ms=left_ms(until), pv_limit=1)
                if job.stop.is_set() or (not a.exact and (a.depth or 0) < depth):
                    break
                self._merge(lines, a.moves)
                if book is not None and not a.exact and (a.depth or 0) <= (book.depth or 0):
                    self._merge(lines, book.moves)
                self._send(job, self._best(lines, job))
                if a.exact:  # proven: a drawn or lost one may still give the opponent chances
                    if self.trap:
                        self._weigh_traps(job, position, rules, lines, depth, deadline)
                    self._send(job, self._best(lines, job), final=True)
                    return
                depth += 1
            if (
                stage == 0
                and len(stages) > 1
                and self._weigh_traps(job, position, rules, lines, depth - 1, heuristic_end)
            ):
                self._send(job, self._best(lines, job))
                break  # the weighing had the rest of the depth-limited search's time
        # 3. prove: the result without majority (database), then the margin with it
        db_seeds = engine.searcher.database_seeds if self.result_db else -1
        if self.result_db and not job.stop.is_set():
            plain = Rules.preset("kalah", houses=rules.houses, seeds=rules.seeds, majority=False)
            if position.houses == 6 and seeds <= RESULT_MAX_SEEDS * max(db_seeds, 20):
                until = time.monotonic() + max(0.0, deadline - time.monotonic()) * RESULT_SHARE
                a = engine.analyse(position, plain, time_ms=max(1.0, left_ms(until)), pv_limit=1)
                if not job.stop.is_set():
                    for mv in a.moves:
                        if isinstance(mv.move, int):
                            lines[mv.move].result = (
                                WIN if mv.lower > 0 else LOSS if mv.upper < 0 else UNKNOWN
                            )
                    self._send(job, self._best(lines, job))
        if not job.stop.is_set() and left_ms(deadline) > 1:
            a = engine.analyse(
                position, rules, time_ms=left_ms(deadline), prove="optimal", pv_limit=1
            )
            if not job.stop.is_set():
                self._merge(lines, a.moves)
                best = self._best(lines, job)
                proven = lines[best].exact and all(
                    ln.upper <= lines[best].lower for ln in lines.values()
                )
                if proven and self.trap:
                    self._weigh_traps(job, position, rules, lines, depth - 1, deadline)
                    best = self._best(lines, job)
                self._send(job, best, final=proven)
        if not job.stop.is_set():
            self._send(job, self._best(lines, job), final=True)

    def _weigh_traps(
        self,
        job: Turn,
        position: Position,
        rules: Rules,
        lines: dict[int, Candidate],
        reached: int,
        until: float,
    ) -> bool:
        """The opponent may err: when the best estimate is a loss, add to each move within
        TRAP_WINDOW of it (when the best is a proven draw, to each move proven to draw) what
        the opponent's likely reply gives beyond the estimate. The reply
        is the vote of searches TRAP_SHALLOWER sowings shallower than ``reached`` (on a table of
        their own); what it gives is the agent's own search of the position after it, as deep
        as the estimate's. False (nothing weighed) when the rule does not apply."""
        best = max(lines.values(), key=Candidate.key)
        if best.outcome == WIN or best.value > 0 or reached < TRAP_MIN_DEPTH + 2:
            return False
        if best.value == 0:  # a draw, proven: only moves proven to keep it
            if not best.exact:
                return False
            chosen = [ln for ln in lines.values() if ln.exact and ln.value == 0]
        else:
            floor = best.value - TRAP_WINDOW
            chosen = [
                ln for ln in lines.values() if ln.outcome == best.outcome and ln.value >= floor
            ]
        candidates = sorted(chosen, key=lambda ln: (-ln.value, ln.move))
        if len(candidates) < 2:
            return False
        me = position.to_move
        depths = sorted({max(TRAP_MIN_DEPTH, reached - 1 - k) for k in TRAP_SHALLOWER})

        def left_ms() -> float:
            return (until - time.monotonic()) * 1000.0

        def worth(after: Position) -> int | None:
            """The agent's value of ``after`` (either side to move), or None if out of time."""
            d = max(1, reached - 2)
            a = self.engine.analyse(after, rules, depth=d, time_ms=max(1.0, left_ms()), pv_limit=1)
            if job.stop.is_set() or (not a.exact and (a.depth or 0) < d):
                return None
            return a.value if after.to_move is me else -a.value

        for line in candidates:
            result = play(position, rules, line.move)
            if result.over or result.after.to_move is me:
                continue
            reply_to = result.after
            votes: list[int] = []
            for kind in TRAP_EVALS:
                self.shallow.searcher.eval_kind = kind
                self.shallow.clear()
                for d in depths:
                    if job.stop.is_set() or left_ms() <= 1:
                        return True
                    a = self.shallow.analyse(
                        reply_to, rules, depth=d, time_ms=max(1.0, left_ms()), pv_limit=1
                    )
                    if job.stop.is_set() or (not a.exact and (a.depth or 0) < d) or not a.moves:
                        return True
                    vote = a.moves[0].move
                    if isinstance(vote, int):
                        votes.append(vote)
            gains: list[int] = []
            known: dict[int, int] = {}
            for vote in votes:
                if vote not in known:
                    nxt = play(reply_to, rules, vote)
                    if nxt.over:
                        south, north = nxt.after.stores
                        known[vote] = (south - north) * (1 if me is Side.SOUTH else -1)
                    else:
                        value = worth(nxt.after)
                        if value is None:
                            return True
                        known[vote] = value
                gains.append(max(0, known[vote] - line.value))
            if gains and sum(gains) >= TRAP_MIN_GAIN * len(gains):
                line.trap = TRAP_WEIGHT * sum(gains) / len(gains)
        return True

    @staticmethod
    def _merge(lines: dict[int, Candidate], values: list[MoveValue]) -> None:
        """Take in an analysis's values; its bounds are proven, whatever its mode."""
        for mv in values:
            if not isinstance(mv.move, int):
                continue
            line = lines[mv.move]
            line.lower = max(line.lower, mv.lower)
            line.upper = min(line.upper, mv.upper)
            if line.lower > line.upper:  # bounds from two searches disagree: trust the newer
                line.lower, line.upper = mv.lower, mv.upper
            line.value = mv.value
            line.trap = 0.0

    @staticmethod
    def _best(lines: dict[int, Candidate], job: Turn) -> int:
        best = max(lines.values(), key=Candidate.key)
        job.lower, job.upper = best.lower, best.upper
        job.value = min(max(best.value, best.lower), best.upper)
        return best.move


def fallback_move(position: Position) -> int:
    """A legal move without the engine: one ending in the store if any, else the rightmost."""
    houses = legal_houses(position)
    n = position.houses
    for house in reversed(houses):
        if position.south[house - 1] == n - house + 1:
            return house
    return houses[-1]
