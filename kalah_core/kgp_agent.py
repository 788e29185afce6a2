"""``kalah kgp``: an agent that plays freeplay games on a Kalah Game Protocol server.

One thread reads the connection and answers ``ping`` at once; a second thinks (the engine
releases the GIL while it searches). For each ``state`` the thinker

1. sends a legal move from a 2-sowing search at once (well within 50 ms);
2. deepens a depth-limited search one sowing at a time (on the table kept from every earlier
   state) and sends the new best move whenever a depth completes and changes it;
3. then tries to prove: on 6-house boards with an endgame database, first the *result* under the
   plain ``kalah`` rules, where the database applies (see below), then the value under the
   server's rules (``kalah`` plus ``majority``);
4. with ``--opponent-may-err``, when losing (or drawing, proven), weighs the opponent's
   chances to err (``_weigh_traps``) in the last part of the depth-limited search's time;
   sends ``yield`` as soon as its move is proven optimal, or when ``--time-per-move`` is up;
5. then, while the opponent thinks, deepens on the position its move left (pondering) until
   the next state comes, so that state's search starts on a warm table.

A ``stop`` from the server interrupts the search at once (:meth:`Engine.interrupt`).

**Securing the result first.** The server records win, draw or loss only. Among the moves the
agent picks one proven to win if there is any (never trading it for a larger estimated
margin), else one not proven to lose, and only then the largest value (proven, or estimated).

**Experience.** Where the agent moved before in this run, the results of those games count:
many opponents answer a position the same way every time, so a won line wins again and a lost
one loses again (:class:`Experience`).

**The databases under majority.** The endgame databases hold the future under rules without
``majority``, where the stores do not matter. Under ``majority`` the game stops as soon as a
store holds more than half of the seeds; but once that happens that player has won whatever
follows, since stores never shrink. So every line of play has the same result (win, draw or
loss) with or without ``majority``, and so has every position under perfect play: the sign of
the plain ``kalah`` value (the database's gain plus the store difference, searched with the
database as exact leaves) is the sign of the server's value. The agent uses that search for the
result of each move, and the ``majority`` search for the margin.

**Games.** The protocol never says when a game starts or ends; the agent tells by replaying:
the moves between two states it was sent (the opponent's, and its own single-choice moves, which
go-kgp plays without asking) are found by a short search from its previous state and move. A
state that cannot be reached so starts a new game. A game's end is seen when the agent's own
move ends it; otherwise (the opponent's move ended it) the result is what the agent had proven
(a proven win stays a win whatever the opponent does), or unknown. Each game is logged in the
Finnish notation as the server saw it (South moved first).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import databases, deepbook
from .egdb import EndgameDatabase, EndgameDatabaseError, rule_key
from .errors import KalahError
from .game import Game, legal_moves, play
from .kgp import (
    Connection,
    KgpError,
    connect,
    format_command,
    kgp_rules,
    parse_board,
    parse_command,
    quote,
)
from .position import Position, Side
from .rules import Rules
from .solver import Engine, MoveValue

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
BRIDGE_NODES = 200_000
"""The most positions searched to find the moves between two states."""
RECONNECT_DELAYS = (0.5, 1, 2, 4, 8, 15, 30)
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
MEMORY_DRAW = 1.0
MEMORY_LOSS = 3.0
"""What the results of earlier games take off a move's estimate where the agent played it
before and no game through it was won: MEMORY_DRAW if one was drawn, else MEMORY_LOSS (a move
through which a game was won is played again: see Experience)."""
TRAP_TT_MB = 4
"""The table of the shallow searches: its own, so that no deep entry informs them."""
"""Seconds before each reconnection attempt; the agent gives up after the last one fails."""

WIN, UNKNOWN, LOSS = 2, 1, 0


# ----------------------------------------------------------------------------- resources


def memory_limit() -> int:
    """Bytes this process may use: the cgroup limit (a container's), else the machine's."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def cpu_limit() -> int:
    """Cores this process may use: its affinity, capped by a cgroup CPU quota."""
    cores = len(os.sched_getaffinity(0))
    with contextlib.suppress(OSError, ValueError):
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, max(1, -(-int(quota) // int(period))))
    return max(1, cores)


def default_tt_mb(limit: int | None = None) -> int:
    """A quarter of the memory limit for the table, 16..1024 MB (256 MB in 1 GiB)."""
    limit = memory_limit() if limit is None else limit
    return int(min(max(limit // 4 // (1 << 20), 16), 1024))


def database_budget(limit: int | None = None) -> int:
    """The largest endgame database (bytes) the agent maps: a quarter of the memory limit."""
    return (memory_limit() if limit is None else limit) // 4


# ------------------------------------------------------------------------- games


def legal_houses(position: Position) -> list[int]:
    """South's legal moves, counted without the engine (a guard before every send)."""
    return [i + 1 for i, seeds in enumerate(position.south) if seeds > 0]


def mirrored(position: Position) -> Position:
    return Position(position.north, position.south, position.stores[::-1], position.to_move.other)


def bridge(
    before: Position, after: Position, rules: Rules, ours: list[int], limit: int = BRIDGE_NODES
) -> list[int] | None:
    """The moves from ``before`` (South to move, playing one of ``ours``; North to move when
    ``ours`` is empty) to ``after`` (South to move with a choice): North's moves, and South's
    moves where South had one only (the server plays those without asking). None if none is
    found within ``limit`` positions."""
    budget = [limit]
    target = (after.south, after.north, after.stores)

    def search(node: Position, path: list[int], first: bool) -> list[int] | None:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if node.stores[0] > after.stores[0] or node.stores[1] > after.stores[1]:
            return None
        moves = legal_moves(node, rules)
        if not moves:
            return None
        if node.to_move is Side.SOUTH:
            if first:
                moves = [m for m in ours if m in moves]
            elif (node.south, node.north, node.stores) == target:
                return path
            elif len(moves) > 1:
                return None
        for move in moves:
            if isinstance(move, int):
                found = search(play(node, rules, move).after, [*path, move], False)
                if found is not None:
                    return found
        return None

    start = before if ours else Position(before.south, before.north, before.stores, Side.NORTH)
    return search(start, [], bool(ours))


@dataclass
class GameRecord:
    """One game as the agent followed it, in its own frame (it plays South)."""

    number: int
    rules: Rules
    start: Position
    """The position the game started from, in the server's frame (South moves first)."""
    we_south: bool
    moves: list[int] = field(default_factory=list)
    last: Position | None = None
    """The last state the agent was sent, and the move it made there."""
    last_move: int | None = None
    margin: int | None = None
    """The final store difference for the agent, when the agent saw the end."""
    lower: int | None = None
    upper: int | None = None
    """Proven bounds on the final margin from the agent's last analysis."""
    estimate: int | None = None
    """The agent's value of its last move (proven or estimated)."""
    decisions: list[tuple[PositionKey, int]] = field(default_factory=list)
    """Each state the agent was sent (its houses and stores) and the move it played there."""

    @property
    def result(self) -> str:
        if self.margin is not None:
            return "win" if self.margin > 0 else "loss" if self.margin < 0 else "draw"
        if self.lower is not None and self.lower > 0:
            return "win"
        return "unknown"

    def notation(self) -> str:
        game = Game(self.rules, self.start)
        try:
            for move in self.moves:
                game.push(move)
        except KalahError as error:  # a record the engine cannot replay: its raw moves
            return f"{' '.join(map(str, self.moves))} ({error})"
        return game.fi()


PositionKey = tuple[tuple[int, ...], tuple[int, ...], tuple[int, int]]


def position_key(position: Position) -> PositionKey:
    return (position.south, position.north, position.stores)


class Experience:
    """The results of the agent's earlier games, by the positions it moved in and its moves.
    Many opponents play the same move in the same position every time; against them a move that
    won once wins again, and one that lost loses again. So where the agent has been before, a
    move through which a game was won is played again, whatever the estimates (the agent
    chooses its own later moves, so it can take that game's line again; a move that lost once
    and won once is a won move), unless another move is proven to win or this one is proven
    to lose (the result first: see _Line.key); a move whose games were drawn or lost gets
    MEMORY_DRAW or MEMORY_LOSS taken off its estimate, so the agent leaves that line where
    another move is close. A game whose end the agent did not see counts by its last
    estimate's sign."""

    def __init__(self) -> None:
        self.seen: dict[PositionKey, dict[int, list[int]]] = {}

    def add(self, record: GameRecord) -> None:
        result = record.result
        if result == "unknown":
            if record.estimate is None:
                return
            result = "win" if record.estimate > 0 else "draw" if record.estimate == 0 else "loss"
        slot = ("win", "draw", "loss").index(result)
        for key, move in record.decisions:
            counts = self.seen.setdefault(key, {}).setdefault(move, [0, 0, 0])
            counts[slot] += 1

    def best(self, position: Position) -> dict[int, str]:
        """The best result a game reached through each move played in ``position``."""
        out: dict[int, str] = {}
        for move, (won, drawn, _lost) in self.seen.get(position_key(position), {}).items():
            out[move] = "win" if won else "draw" if drawn else "loss"
        return out


@dataclass
class Summary:
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    unknown: int = 0
    margins: list[int] = field(default_factory=list)

    def add(self, record: GameRecord) -> None:
        self.games += 1
        result = record.result
        if result == "win":
            self.wins += 1
        elif result == "draw":
            self.draws += 1
        elif result == "loss":
            self.losses += 1
        else:
            self.unknown += 1
        if record.margin is not None:
            self.margins.append(record.margin)

    @property
    def mean_margin(self) -> float | None:
        return sum(self.margins) / len(self.margins) if self.margins else None

    def text(self) -> str:
        mean = self.mean_margin
        return (
            f"games {self.games}: {self.wins} won, {self.draws} drawn, {self.losses} lost, "
            f"{self.unknown} ended out of sight unproven; mean margin "
            + ("n/a" if mean is None else f"{mean:+.2f}")
            + f" over the {len(self.margins)} games whose end the agent saw"
        )


class Tracker:
    """Follows the games through the states the server sends (see the module docstring)."""

    def __init__(self, on_end: Callable[[GameRecord], None]) -> None:
        self.game: GameRecord | None = None
        self.count = 0
        self._on_end = on_end
        self.reconnected = False
        """Set on a new connection: a first state equal to the last one is that state again."""

    def observe(self, state: Position, rules: Rules) -> bool:
        """Take in a new state; True when it starts a new game."""
        game = self.game
        resent, self.reconnected = self.reconnected, False
        if game is not None and game.last is not None and game.rules == rules:
            if resent and (state.south, state.north, state.stores) == (
                game.last.south,
                game.last.north,
                game.last.stores,
            ):
                game.last_move = None
                return False  # the state sent again after a reconnection
            ours = [game.last_move] if game.last_move is not None else []
            path = bridge(game.last, state, rules, ours) if ours else None
            if path is None:  # a different move of ours reached the server (or none)
                others = [m for m in legal_houses(game.last) if m not in ours]
                path = bridge(game.last, state, rules, others)
            if path is not None:
                game.moves.extend(path)
                game.last, game.last_move = state, None
                return False
        if game is not None:
            self.finish()
        seeds = (state.total_seeds // (2 * state.houses),) * state.houses
        start = Position(seeds, seeds)  # the server's start, whatever Rules.seeds can hold
        we_south = True
        moves: list[int] = []
        if (state.south, state.north, state.stores) != (start.south, start.north, start.stores):
            path = bridge(start, state, rules, [])
            if path is not None:
                we_south = False
                moves = path
            else:  # joined in the middle: the record starts here
                start = state
        self.count += 1
        self.game = GameRecord(self.count, rules, start, we_south, moves, state)
        return True

    def played(
        self, move: int, lower: int | None, upper: int | None, estimate: int | None = None
    ) -> None:
        """The agent's final move for the last state (its proven bounds, its value). The next
        state's bridge starts with it; a move that ends the game ends the record."""
        game = self.game
        if game is None or game.last is None:
            return
        game.last_move, game.lower, game.upper = move, lower, upper
        game.estimate = estimate
        game.decisions.append((position_key(game.last), move))
        result = play(game.last, game.rules, move)
        if result.over:
            game.moves.append(move)
            south, north = result.after.stores
            game.margin = south - north
            game.last_move = None
            self.finish()

    def finish(self) -> GameRecord | None:
        """End the current record (its end out of sight unless its margin is known)."""
        game, self.game = self.game, None
        if game is not None:
            if game.last_move is not None:  # the server played it; what followed is unseen
                game.moves.append(game.last_move)
            self._on_end(game)
        return game


# ------------------------------------------------------------------------- thinking


@dataclass
class Job:
    """One ``state`` to answer."""

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
class _Line:
    move: int
    value: int = 0
    lower: int = -(1 << 20)
    upper: int = 1 << 20
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
        self.current: Job | None = None
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._pending: Job | None = None
        """The latest state not yet taken up (a newer one replaces it)."""
        self._closing = False
        self._quiet = False
        """No pondering until the next state (after the server's goodbye, or a stop_all)."""
        self.on_start: Callable[[Job, Rules], None] = lambda job, rules: None
        self.on_done: Callable[[Job, Rules], None] = lambda job, rules: None
        self.thread = threading.Thread(target=self._run, name="kgp-thinker", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> None:
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

    def _halt(self, job: Job) -> None:
        if job.stop.is_set():  # halted before: its re-interrupt is on its way (one timer)
            return
        job.stop.set()
        self.engine.interrupt()
        self.shallow.interrupt()
        # An analysis that starts just now clears the interrupt: interrupt it again then.
        again = threading.Timer(REINTERRUPT_S, self._interrupt_again, (job,))
        again.daemon = True
        again.start()

    def _interrupt_again(self, job: Job) -> None:
        with self.lock:
            if self.current is job:
                self.engine.interrupt()
                self.shallow.interrupt()

    def idle(self) -> bool:
        """No state is being answered or waiting (pondering is idle)."""
        current = self.current
        return (current is None or current.ponder) and self._pending is None

    def _next(self, wait: bool) -> Job | None:
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
        job = Job(None, position, lambda line: None, time.monotonic(), ponder=True)
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

    def _send(self, job: Job, move: int, *, final: bool = False) -> None:
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

    def think(self, job: Job, rules: Rules) -> None:
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
        lines = {m: _Line(m) for m in moves}
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
        job: Job,
        position: Position,
        rules: Rules,
        lines: dict[int, _Line],
        reached: int,
        until: float,
    ) -> bool:
        """The opponent may err: when the best estimate is a loss, add to each move within
        TRAP_WINDOW of it (when the best is a proven draw, to each move proven to draw) what
        the opponent's likely reply gives beyond the estimate. The reply
        is the vote of searches TRAP_SHALLOWER sowings shallower than ``reached`` (on a table of
        their own); what it gives is the agent's own search of the position after it, as deep
        as the estimate's. False (nothing weighed) when the rule does not apply."""
        best = max(lines.values(), key=_Line.key)
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
    def _merge(lines: dict[int, _Line], values: list[MoveValue]) -> None:
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
    def _best(lines: dict[int, _Line], job: Job) -> int:
        best = max(lines.values(), key=_Line.key)
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


# ------------------------------------------------------------------------- the agent


@dataclass
class AgentOptions:
    server: str
    games: int | None = None
    name: str = "kalah-core"
    token: str | None = None
    time_per_move: float = 1.0
    threads: int = 1
    tt_mb: int = 256
    opponent_may_err: bool = False
    """When losing, weigh the opponent's chances to err (Thinker._weigh_traps); off by default,
    as it showed no gain against go-kgp's bots and costs depth (docs/kgp.md)."""
    memory: bool = True
    """Prefer moves by the results of earlier games in the same position (Experience)."""
    authors: str = "kalah-core"
    description: str = (
        "exact solver with a depth-limited fallback (kalah-core): secures the result, "
        "then the margin"
    )


class Agent:
    """Plays on one server until the server closes, ``games`` are done, or reconnecting fails."""

    def __init__(self, options: AgentOptions, engine: Engine, result_db: bool = False) -> None:
        self.options = options
        self.summary = Summary()
        self.records: list[GameRecord] = []
        self.tracker = Tracker(self._game_over)
        self.thinker = Thinker(
            engine, options.time_per_move, result_db, trap=options.opponent_may_err
        )
        self.experience = Experience() if options.memory else None
        self.thinker.experience = self.experience
        self.thinker.on_start = self._on_start
        self.thinker.on_done = self._on_done
        self.done = threading.Event()
        self._conn: Connection | None = None
        self._records_lock = threading.Lock()
        self._goodbye = False
        """The server said goodbye on the current connection."""

    # The thinker's callbacks (in its thread, one state at a time).
    def _on_start(self, job: Job, rules: Rules) -> None:
        if self.tracker.observe(job.position, rules) and self._enough():
            # A new game began after the last one wanted: leave before playing it.
            self.done.set()
            self.thinker.stop_all()
            self._close()

    def _on_done(self, job: Job, rules: Rules) -> None:
        if job.sent is not None and not self.done.is_set():
            self.tracker.played(job.sent, job.lower, job.upper, job.value)

    def _game_over(self, record: GameRecord) -> None:
        with self._records_lock:
            self.records.append(record)
            self.summary.add(record)
            if self.experience is not None:
                self.experience.add(record)
        side = "South" if record.we_south else "North"
        margin = "?" if record.margin is None else f"{record.margin:+d}"
        log.info(
            "game %d (%d houses, %d seeds; we were %s): %s, margin %s: %s",
            record.number,
            record.rules.houses,
            record.rules.seeds,
            side,
            record.result,
            margin,
            record.notation(),
        )
        if self._enough() and record.margin is not None:
            self.done.set()
            self._close()

    def _last_game_over(self) -> bool:
        """Whether the game in progress is the last one wanted and the agent answered its
        last state: an idle ping then says it is over."""
        if self.options.games is None or self.tracker.game is None:
            return False
        return self.summary.games + 1 >= self.options.games and self.thinker.idle()

    def _enough(self) -> bool:
        return self.options.games is not None and self.summary.games >= self.options.games

    def _close(self) -> None:
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send("goodbye")
            conn.close()

    def stop(self) -> None:
        """End the run from another thread (a signal handler): say goodbye and close."""
        self.done.set()
        self.thinker.stop_all()
        self._close()

    def run(self) -> Summary:
        failures = 0
        connected_once = False
        try:
            while not self.done.is_set():
                try:
                    conn = connect(self.options.server)
                except (OSError, KgpError) as error:
                    if not connected_once:
                        raise KgpError(
                            f"cannot connect ({error})", text=self.options.server
                        ) from error
                    if isinstance(error, KgpError) or failures >= len(RECONNECT_DELAYS):
                        log.warning("giving up on %s: %s", self.options.server, error)
                        break
                    log.warning("cannot connect to %s (%s); retrying", self.options.server, error)
                    self.done.wait(RECONNECT_DELAYS[failures])
                    failures += 1
                    continue
                self.tracker.reconnected = connected_once
                connected_once = True
                failures = 0
                self._conn = conn
                closed_by_server = self._session(conn)
                self.thinker.stop_all()
                conn.close()
                self._conn = None
                if closed_by_server or self.done.is_set():
                    break
                log.warning("connection to %s dropped; reconnecting", self.options.server)
                self.done.wait(RECONNECT_DELAYS[0])
        finally:
            self.thinker.close()
            if self.tracker.game is not None and not self._enough():
                self.tracker.finish()
        return self.summary

    def _session(self, conn: Connection) -> bool:
        """Read one connection until it ends; True when the server ended it (``goodbye``)."""
        self._goodbye = False
        while True:
            line = conn.receive()
            if line is None:
                return self._goodbye or self.done.is_set()
            try:
                ended = self.handle(conn, line)
            except OSError as error:  # a send on a closed connection: as if it ended here
                log.warning("connection lost while answering: %s", error)
                return self._goodbye or self.done.is_set()
            if ended:
                return True

    def handle(self, conn: Connection, line: str) -> bool:
        """Act on one line from the server; True when the session is over. A line that is not
        a command, or whose arguments do not fit, is logged and ignored; only a failed send
        (OSError) reaches the caller."""
        if not line.strip():
            return False
        try:
            command = parse_command(line)
        except KgpError as error:
            log.warning("ignoring a malformed line: %s", error)
            return False
        name = command.name
        if name == "ping" and self._last_game_over():
            # go-kgp pings an idle agent only when its game is over, before scheduling
            # the next one: with the games wanted played, leave without a pong (a pong
            # would start a game that the server then records as given up).
            self.tracker.finish()
            self.done.set()
            self._close()
            return True
        if name == "ping":
            conn.send(format_command("pong", ref=command.id))
        elif name == "kgp":
            if not self._handshake(conn, command.args):
                return True
        elif name == "state":
            if self._goodbye:
                log.warning("state %s after goodbye: ignored", command.id)
                return False
            if not command.args:
                log.warning("state without a board: %r", line[:200])
                return False
            try:
                position = parse_board(command.args[0])
            except KgpError as error:
                log.warning("ignoring a state: %s", error)
                return False
            if not legal_houses(position):
                log.warning("state %s has no legal move", command.id)
                return False
            self.thinker.submit(Job(command.id, position, conn.send, time.monotonic()))
        elif name == "stop":
            self.thinker.stop(command.ref)
        elif name == "goodbye":
            # The server ends the session: searching on would answer nobody.
            self._goodbye = True
            self.thinker.stop_all()
        elif name == "error":
            log.warning("server error: %s", " ".join(command.args)[:200])
        elif name in ("ok", "set"):
            log.debug("server: %s", line[:200])
        else:
            log.debug("ignoring %r", line[:200])
        return False

    def _handshake(self, conn: Connection, args: tuple[str, ...]) -> bool:
        major = args[0] if args else ""
        if major != "1":
            log.error("the server speaks KGP %s; this agent speaks 1.x", " ".join(args))
            conn.send("goodbye")
            return False
        options = self.options
        conn.send(format_command("set", "info:name", quote(options.name)))
        conn.send(format_command("set", "info:authors", quote(options.authors)))
        conn.send(format_command("set", "info:description", quote(options.description)))
        if options.token:
            conn.send(format_command("set", "auth:token", quote(options.token)))
        conn.send(format_command("mode", "freeplay"))
        return True


def make_engine(options: AgentOptions, houses: int = 6) -> tuple[Engine, bool]:
    """The agent's engine: its table, its threads, and on 6 houses the largest endgame
    database of the plain ``kalah`` rules that fits the memory budget (True if one does)."""
    # The deep book (KGP 6x6's first sowings): its estimates, from searches of 300-400 M
    # nodes, decide the opening moves instead of the agent's seconds of search (Thinker.think).
    engine = Engine(tt_mb=options.tt_mb, threads=options.threads, deep_book=deepbook.shipped())
    key = rule_key(Rules.preset("kalah", houses=houses))
    found = databases.headers().get(key)
    if found is None:
        return engine, False
    path, header = found
    if header.entries > database_budget():
        log.warning("%s is larger than the memory budget; playing without it", path)
        return engine, False
    try:
        engine.attach(EndgameDatabase.open_any(path))
    except EndgameDatabaseError as error:
        log.warning("skipping %s", error)
        return engine, False
    log.info("endgame database %s (%d seeds)", path, header.max_seeds)
    return engine, True
