"""A small Kalah Game Protocol server for the conformance tests of ``kalah kgp``.

Written from the KGP specification (KWARC/kalah-game, spec/), not from go-kgp: it sends
``kgp 1 0 1``, waits for ``mode freeplay``, then plays games against the one client with a
deterministic opponent (the lowest legal house), under the ``kalah`` rules plus ``majority``
(what go-kgp plays). The client always sees itself as South: when it sits North the board is
mirrored. Each client turn with a choice is a ``state`` with an even id; the turn ends at the
client's ``yield``, after ``stop_after`` seconds (then ``stop``), or after ``stop_after_moves``
moves. The last move before the end counts; an illegal one is a resignation (recorded, and
fails the tests). A single legal move is played without asking, as go-kgp does.

Knobs for the tests: ``ping_after_move`` (a ``ping`` once the client's first move for a state
arrived, i.e. while it searches), ``drop_after_states`` (close the connection without a
``goodbye`` after that many states; a client that reconnects, the same ``auth:token`` or not,
is sent the unfinished game's state again), ``malformed`` (lines that are not commands, a bad
board, an unknown command, sent before every state), ``ping_between_games`` (go-kgp's check
that an agent is alive before it schedules a game) and ``client_sides`` (South or North per
game).
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from kalah_core import Game, Position, Rules, Side
from kalah_core.kgp.protocol import board_literal, format_command, parse_command


@dataclass
class StateLog:
    """What happened to one ``state``."""

    id: int
    board: str
    legal: list[int]
    moves: list[tuple[float, int]] = field(default_factory=list)
    """(seconds after the state, house) of every move before the turn ended."""
    after_stop: list[int] = field(default_factory=list)
    """Moves that arrived after the server ended the turn (ignored, as the spec says)."""
    yielded: bool = False
    stopped: bool = False
    played: int | None = None
    pings: list[tuple[float, float | None]] = field(default_factory=list)
    """(seconds after the state the ping went out, seconds until its pong or None)."""
    pong_before_end: bool = False
    ended: float = 0.0
    """Seconds after the state when the turn ended (``yield`` or ``stop``)."""


@dataclass
class GameLog:
    client_south: bool
    game: Game
    states: list[StateLog] = field(default_factory=list)
    illegal: list[tuple[int, int]] = field(default_factory=list)
    """(state id, move) of every illegal final move (a resignation)."""
    resigned: bool = False
    random_moves: int = 0

    @property
    def margin(self) -> int:
        """The final store difference for the client."""
        south, north = self.game.position.stores
        return south - north if self.client_south else north - south


class _Closed(Exception):
    pass


class _Lines:
    """A line channel over a TCP socket or a websockets connection, read by a thread."""

    def __init__(self, send: Any, close: Any) -> None:
        self._send = send
        self._close = close
        self.incoming: queue.Queue[str | None] = queue.Queue()
        self.closed = False

    def send(self, line: str) -> None:
        if self.closed:
            raise _Closed
        try:
            self._send(line + "\r\n")
        except Exception as error:
            raise _Closed from error

    def get(self, timeout: float) -> str | None:
        """The next line; None when none came within ``timeout``. _Closed at the end."""
        try:
            line = self.incoming.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            raise _Closed
        return line

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with suppress(Exception):
                self._close()


class KgpTestServer:
    """One server on a free local port; ``url`` is what the agent connects to."""

    def __init__(
        self,
        *,
        houses: int = 6,
        seeds: int = 3,
        games: int = 1,
        client_sides: tuple[bool, ...] = (True,),
        stop_after: float = 5.0,
        stop_after_moves: int | None = None,
        ping_after_move: bool = False,
        drop_after_states: int | None = None,
        malformed: bool = False,
        ping_between_games: bool = False,
        websocket: bool = False,
    ) -> None:
        self.rules = Rules.preset("kalah", majority=True, houses=houses, seeds=seeds)
        self.games_wanted = games
        self.client_sides = client_sides
        self.stop_after = stop_after
        self.stop_after_moves = stop_after_moves
        self.ping_after_move = ping_after_move
        self.drop_after_states = drop_after_states
        self.malformed = malformed
        self.ping_between_games = ping_between_games
        self.websocket = websocket
        self.games: list[GameLog] = []
        self.connections = 0
        self.client_info: dict[str, str] = {}
        self.errors: list[str] = []
        self.done = threading.Event()
        self._next_id = 0
        self._current: GameLog | None = None
        self._dropped = False
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # --------------------------------------------------------------------- transport

    def start(self) -> KgpTestServer:
        if self.websocket:
            from websockets.sync.server import serve

            self._server = serve(self._ws_handler, "127.0.0.1", 0)
            port = self._server.socket.getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}/socket"
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        else:
            sock = socket.create_server(("127.0.0.1", 0))
            self._server = sock
            self.url = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
            self._thread = threading.Thread(target=self._tcp_accept, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.websocket:
            self._server.shutdown()
        else:
            self._server.close()

    def _tcp_accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            lines = _Lines(lambda text, c=conn: c.sendall(text.encode()), _closer(conn))

            def read(c: socket.socket = conn, ch: _Lines = lines) -> None:
                with c.makefile("rb") as reader:
                    try:
                        for raw in reader:
                            ch.incoming.put(raw.decode().rstrip("\r\n"))
                    except OSError:
                        pass
                ch.incoming.put(None)

            threading.Thread(target=read, daemon=True).start()
            threading.Thread(target=self._serve, args=(lines,), daemon=True).start()

    def _ws_handler(self, ws: Any) -> None:
        if ws.request.path != "/socket":
            ws.close()
            return
        lines = _Lines(ws.send, ws.close)

        def read() -> None:
            buffer = ""
            try:
                for message in ws:
                    buffer += message if isinstance(message, str) else message.decode()
                    *done, buffer = buffer.split("\n")
                    for line in done:
                        lines.incoming.put(line.rstrip("\r"))
            except Exception:
                pass
            lines.incoming.put(None)

        threading.Thread(target=read, daemon=True).start()
        self._serve(lines)

    # --------------------------------------------------------------------- protocol

    def _id(self) -> int:
        with self._lock:
            self._next_id += 2
            return self._next_id

    def _serve(self, lines: _Lines) -> None:
        with self._lock:
            self.connections += 1
        try:
            lines.send(format_command("kgp", 1, 0, 1))
            deadline = time.monotonic() + 20
            while True:
                line = lines.get(max(0.0, deadline - time.monotonic()))
                if line is None:
                    self.errors.append("no mode within 20 s")
                    lines.send("goodbye")
                    return
                command = parse_command(line)
                if command.name == "set" and len(command.args) == 2:
                    self.client_info[command.args[0]] = command.args[1]
                elif command.name == "mode":
                    if command.args != ("freeplay",):
                        lines.send(format_command("error", '"Unsupported activity"'))
                        lines.send("goodbye")
                        return
                    break
            self._play(lines)
            lines.send("goodbye")
        except _Closed:
            pass
        finally:
            lines.close()

    def _play(self, lines: _Lines) -> None:
        while len(self.games) < self.games_wanted or self._current is not None:
            if self._current is None:
                n = len(self.games)
                south = self.client_sides[n % len(self.client_sides)]
                self._current = GameLog(south, Game(self.rules))
                self.games.append(self._current)
            log = self._current
            game = log.game
            while game.outcome() is None:
                client_turn = (game.position.to_move is Side.SOUTH) == log.client_south
                moves = [m for m in game.legal_moves() if isinstance(m, int)]
                if not client_turn:
                    game.push(moves[0])
                    continue
                if len(moves) == 1:
                    game.push(moves[0])
                    continue
                if not self._client_turn(lines, log, moves):
                    return
                if log.resigned:
                    break
            self._current = None
            if len(self.games) >= self.games_wanted:
                self.done.set()
            elif self.ping_between_games and not self._alive(lines):
                return

    def _alive(self, lines: _Lines) -> bool:
        """go-kgp's check before it schedules a game: a ping, and a pong within 20 s."""
        ping_id = self._id()
        lines.send(format_command("ping", id=ping_id))
        end = time.monotonic() + 20
        while time.monotonic() < end:
            line = lines.get(max(0.0, end - time.monotonic()))
            if line is None:
                break
            try:
                command = parse_command(line)
            except ValueError:
                continue
            if command.name == "pong" and command.ref == ping_id:
                return True
        return False

    def _client_turn(self, lines: _Lines, log: GameLog, moves: list[int]) -> bool:
        """One state for the client; False when the connection ended (the game waits)."""
        if (
            self.drop_after_states is not None
            and not self._dropped
            and sum(len(g.states) for g in self.games) >= self.drop_after_states
        ):
            self._dropped = True
            lines.close()
            return False
        game = log.game
        position = game.position if log.client_south else _mirror(game.position)
        if self.malformed:
            lines.send("@@ this is not a command")
            lines.send('7 set info:comment "unterminated')
            lines.send(format_command("state", "<6,0,0,1,2>", id=self._id()))
            lines.send(format_command("frobnicate", 1, 2, 3, id=self._id()))
        sid = self._id()
        entry = StateLog(sid, board_literal(position), moves)
        log.states.append(entry)
        sent = time.monotonic()
        lines.send(format_command("state", board_literal(position), id=sid))
        ping_id: int | None = None
        ping_at = 0.0
        chosen: int | None = None
        end = sent + self.stop_after
        while True:
            line = lines.get(max(0.0, end - time.monotonic()))
            now = time.monotonic()
            if line is None:
                break
            try:
                command = parse_command(line)
            except ValueError:
                self.errors.append(f"malformed line from the client: {line!r}")
                continue
            if command.name == "pong" and command.ref == ping_id and ping_id is not None:
                entry.pings.append((ping_at - sent, now - ping_at))
                entry.pong_before_end = True
                ping_id = None
            elif command.name == "move" and command.ref == sid:
                house = int(command.args[0])
                entry.moves.append((now - sent, house))
                chosen = house
                if self.ping_after_move and not entry.pings and ping_id is None:
                    ping_id, ping_at = self._id(), time.monotonic()
                    lines.send(format_command("ping", id=ping_id))
                if self.stop_after_moves is not None and len(entry.moves) >= self.stop_after_moves:
                    break
            elif command.name == "yield" and command.ref == sid:
                entry.yielded = True
                break
            elif command.name == "move":
                entry.after_stop.append(int(command.args[0]))
            elif command.name == "set" and len(command.args) == 2:
                self.client_info[command.args[0]] = command.args[1]
            if time.monotonic() >= end:
                break
        entry.ended = time.monotonic() - sent
        if not entry.yielded:
            entry.stopped = True
            lines.send(format_command("stop", id=self._id(), ref=sid))
        if ping_id is not None:  # the client ended its turn before the ping reached it
            entry.pings.append((ping_at - sent, self._pong(lines, ping_id, ping_at)))
        # Moves the client sends for this state from now on are late: note them.
        self._late_moves(lines, entry)
        if chosen is None:
            log.random_moves += 1
            chosen = moves[0]
        if chosen not in moves:
            log.illegal.append((sid, chosen))
            log.resigned = True
            return True
        entry.played = chosen
        log.game.push(chosen)
        return True

    def _pong(self, lines: _Lines, ping_id: int, ping_at: float) -> float | None:
        """Seconds from the ping to its pong (waiting up to 20 s), or None."""
        end = time.monotonic() + 20
        while time.monotonic() < end:
            line = lines.get(max(0.0, end - time.monotonic()))
            if line is None:
                return None
            try:
                command = parse_command(line)
            except ValueError:
                continue
            if command.name == "pong" and command.ref == ping_id:
                return time.monotonic() - ping_at
        return None

    def _late_moves(self, lines: _Lines, entry: StateLog) -> None:
        """Give the client a moment to (wrongly) send more moves for an ended turn."""
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            line = lines.get(max(0.0, end - time.monotonic()))
            if line is None:
                return
            try:
                command = parse_command(line)
            except ValueError:
                continue
            if command.name == "move" and command.ref == entry.id:
                entry.after_stop.append(int(command.args[0]))
            elif command.name == "pong":
                continue


def _closer(conn: socket.socket) -> Any:
    def close() -> None:
        with suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)  # the reader's file keeps the socket open
        conn.close()

    return close


def _mirror(position: Position) -> Position:
    return Position(position.north, position.south, position.stores[::-1], position.to_move.other)


@contextmanager
def running(server: KgpTestServer) -> Iterator[KgpTestServer]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


class ScriptedServer:
    """A hostile server for the agent's hardening tests: one connection on a free local port,
    driven by the test line by line (raw bytes too), with the client's lines as they come.
    Used as a context manager; :meth:`accept` waits for the agent to connect."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"tcp://127.0.0.1:{self._listener.getsockname()[1]}"
        self._conn: socket.socket | None = None
        self.incoming: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def accept(self, timeout: float = 60) -> None:
        self._listener.settimeout(timeout)
        conn, _ = self._listener.accept()
        conn.settimeout(None)
        self._conn = conn

        def read() -> None:
            with suppress(OSError), conn.makefile("rb") as reader:
                for raw in reader:
                    self.incoming.put(raw.decode(errors="replace").rstrip("\r\n"))
            self.incoming.put(None)

        threading.Thread(target=read, daemon=True).start()

    def send_raw(self, data: bytes) -> None:
        assert self._conn is not None
        self._conn.sendall(data)

    def send(self, line: str) -> None:
        self.send_raw(line.encode() + b"\r\n")

    def handshake(self) -> None:
        """``kgp 1 0 1``, then the client's lines up to its ``mode freeplay``."""
        self.accept()
        self.send(format_command("kgp", 1, 0, 1))
        self.expect("mode freeplay")

    def expect(self, wanted: str, *, alive: Any = None, timeout: float = 120) -> list[str]:
        """The client's lines up to and including ``wanted`` (read since the last call).
        Fails when the connection closes first, when ``alive()`` turns false with no line
        waiting (the client died), or as a guard against a hang after ``timeout``."""
        lines: list[str] = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.incoming.get(timeout=0.1)
            except queue.Empty:
                if alive is not None and not alive():
                    raise AssertionError(f"the client ended before {wanted!r}: {lines}") from None
                continue
            if line is None:
                raise AssertionError(f"the connection closed before {wanted!r}: {lines}")
            lines.append(line)
            self.seen.append(line)
            if line == wanted:
                return lines
        raise AssertionError(f"no {wanted!r} within {timeout} s: {lines[-20:]}")

    def close(self) -> None:
        if self._conn is not None:
            with suppress(OSError):
                self._conn.shutdown(socket.SHUT_RDWR)
            self._conn.close()
        self._listener.close()
