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
result of each move, and the ``majority`` search for the margin; that one reads a database
built for ``majority`` and the game's total of seeds where one is found (``kalah egdb build
--rules kgp --houses 6 --game-seeds 6 --seeds 20``: a value for each store the mover may hold).

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
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass

from .. import databases, deepbook
from ..egdb import EndgameDatabase, EndgameDatabaseError, rule_key
from ..rules import Rules
from ..solver import Engine
from .experience import Experience
from .limits import database_budget
from .protocol import (
    Connection,
    KgpError,
    connect,
    format_command,
    parse_board,
    parse_command,
    quote,
)
from .records import GameRecord, Summary, legal_houses
from .thinker import Thinker, Turn
from .tracker import Tracker

log = logging.getLogger("kalah.kgp")

RECONNECT_DELAYS = (0.5, 1, 2, 4, 8, 15, 30)
"""Seconds before each reconnection attempt; the agent gives up after the last one fails."""


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
    def _on_start(self, job: Turn, rules: Rules) -> None:
        if self.tracker.observe(job.position, rules) and self._enough():
            # A new game began after the last one wanted: leave before playing it.
            self.done.set()
            self.thinker.stop_all()
            self._close()

    def _on_done(self, job: Turn, rules: Rules) -> None:
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
            self.thinker.submit(Turn(command.id, position, conn.send, time.monotonic()))
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
    """The agent's engine: its table, its threads, and on up to 8 houses the largest endgame
    databases that fit the memory budget: the plain ``kalah`` rules' (True if it is attached:
    the search for each move's result uses it) and the server's own under ``majority``, one
    for each total of seeds found (the search for the margin reads the one of its game)."""
    # The deep book (KGP 6x6's first sowings): its estimates, from searches of 300-400 M
    # nodes, decide the opening moves instead of the agent's seconds of search (Thinker.think).
    engine = Engine(tt_mb=options.tt_mb, threads=options.threads, deep_book=deepbook.shipped())
    plain = rule_key(Rules.preset("kalah", houses=houses))
    found = databases.headers()
    chosen = [found[plain]] if plain in found else []
    chosen += [
        entry
        for key, entry in sorted(found.items(), key=lambda item: item[0].total)
        if key.total and dataclasses.replace(key, total=0) == plain
    ]
    budget = database_budget()
    result_db = False
    for path, header in chosen:
        if header.entries > budget:
            log.warning("%s is larger than the memory budget left; playing without it", path)
            continue
        try:
            engine.attach(EndgameDatabase.open_any(path))
        except EndgameDatabaseError as error:
            log.warning("skipping %s", error)
            continue
        budget -= header.entries
        result_db = result_db or header.key == plain
        log.info("endgame database %s (%d seeds)", path, header.max_seeds)
    return engine, result_db
