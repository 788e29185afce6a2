"""The Kalah Game Protocol (KGP) of KWARC's go-kgp servers: commands, boards, transports.

A command is one line ``[id][@ref] name args...`` ending in CRLF, at most 16,384 characters.
Arguments are integers, reals, words, double-quoted strings (``\\`` escapes) or board literals
``<n,south_store,north_store,s1..sn,n1..nn>``: South's houses then North's, each side's house 1
first (counted from that player's own left, as in this engine). The client always plays South;
the server mirrors the board for the agent that sits North.

:func:`parse_command` and :func:`format_command` read and write lines; :func:`parse_board` and
:func:`board_literal` convert boards; :func:`connect` opens a :class:`Connection` over TCP
(``tcp://HOST:PORT``) or a WebSocket (``ws://HOST:PORT/socket``, ``wss://...``; needs the
``websockets`` package, the ``kgp`` extra). The agent is in :mod:`kalah_core.kgp.agent`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..errors import KalahError
from ..position import Position, Side
from ..rules import MAX_START_SEEDS, Rules

log = logging.getLogger("kalah.kgp")

MAX_LINE = 16384
"""The longest command the protocol allows, line end included. A transport drops a longer line
whole (never splits it: its tail would be read as a command of its own)."""

MAX_ID_DIGITS = 18
"""The most digits of a command id or reference (a 64-bit counter fits)."""
MAX_COUNT_DIGITS = 6
"""The most digits of a number in a board literal (a board holds at most a few hundred
seeds). Both bounds are checked before ``int`` reads the digits: Python refuses a string of
more than 4,300 digits with a ValueError, and a hostile server could send one."""

DEFAULT_TCP_PORT = 2671

_HEAD = re.compile(r"^\s*(?:(\d*)(?:@(\d+))?\s+)?([A-Za-z0-9]+)(?:\s+(.*?))?\s*$")
_ARG = re.compile(r'"(?:[^"\\]|\\.)*"|<[^>]*>|[^\s"<]+')
_BOARD = re.compile(r"^<\s*(\d+(?:\s*,\s*\d+)+)\s*>$")


class KgpError(KalahError):
    """A line that is not a KGP command, or a board that is not a Kalah board."""

    def __init__(self, message: str, *, text: str) -> None:
        self.field = "kgp"
        self.text = text
        super().__init__(f"{message}: {text[:200]!r}")


@dataclass(frozen=True, slots=True)
class Command:
    """One parsed line: its id and reference (None when absent), name and arguments.
    String arguments are unquoted; a board stays a literal (see :func:`parse_board`)."""

    name: str
    args: tuple[str, ...] = ()
    id: int | None = None
    ref: int | None = None


def parse_command(line: str) -> Command:
    """The command on ``line`` (its line end stripped); KgpError when it is malformed."""
    if len(line) > MAX_LINE:
        raise KgpError(f"line longer than {MAX_LINE} characters", text=line)
    match = _HEAD.match(line.rstrip("\r\n"))
    if match is None:
        raise KgpError("not a KGP command", text=line)
    ident, ref, name, rest = match.groups()
    if len(ident or "") > MAX_ID_DIGITS or len(ref or "") > MAX_ID_DIGITS:
        raise KgpError(f"an id or reference of more than {MAX_ID_DIGITS} digits", text=line)
    args: list[str] = []
    pos = 0
    rest = rest or ""
    while pos < len(rest):
        if rest[pos].isspace():
            pos += 1
            continue
        arg = _ARG.match(rest, pos)
        if arg is None:
            raise KgpError("unterminated string or board", text=line)
        token = arg.group()
        args.append(_unquote(token) if token.startswith('"') else token)
        pos = arg.end()
    return Command(name, tuple(args), int(ident) if ident else None, int(ref) if ref else None)


def _unquote(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def quote(text: str) -> str:
    """``text`` as a KGP string argument."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped.replace(chr(9), chr(92) + "t")}"'


def format_command(
    name: str, *args: str | int, id: int | None = None, ref: int | None = None
) -> str:
    """One command line without its line end. A ``str`` argument is written as given (a
    word, a number or a board literal): wrap free text in :func:`quote`."""
    head = f"{id if id is not None else ''}{f'@{ref}' if ref is not None else ''}"
    parts = [head] if head else []
    parts.append(name)
    parts.extend(str(a) for a in args)
    return " ".join(parts)


def parse_board(text: str) -> Position:
    """The position of a board literal, South (the client) to move."""
    match = _BOARD.match(text.strip())
    if match is None:
        raise KgpError("not a board literal <n,south_store,north_store,houses...>", text=text)
    parts = [part.strip() for part in match.group(1).split(",")]
    if any(len(part) > MAX_COUNT_DIGITS for part in parts):
        raise KgpError(f"a number of more than {MAX_COUNT_DIGITS} digits", text=text)
    numbers = [int(part) for part in parts]
    n = numbers[0]
    if n < 1 or len(numbers) != 3 + 2 * n:
        raise KgpError(f"a board of {n} houses a side needs {3 + 2 * n} numbers", text=text)
    south = tuple(numbers[3 : 3 + n])
    north = tuple(numbers[3 + n :])
    return Position(south, north, (numbers[1], numbers[2]), Side.SOUTH)


def board_literal(position: Position) -> str:
    """The board literal of ``position`` (the side to move is not part of it)."""
    counts = (position.houses, *position.stores, *position.south, *position.north)
    return "<" + ",".join(str(c) for c in counts) + ">"


def kgp_rules(position: Position) -> Rules:
    """The rules go-kgp plays, for the board of ``position``: the ``kalah`` rules plus
    ``majority``. The server never states them; the seeds a house started with are the
    board's total over the houses (clipped to what :class:`Rules` accepts: they only set the
    start, which the agent never needs)."""
    houses = position.houses
    seeds = position.total_seeds // (2 * houses)
    return Rules.preset(
        "kalah",
        majority=True,
        houses=houses,
        seeds=min(max(seeds, 1), MAX_START_SEEDS),
    )


# ------------------------------------------------------------------------- transports


class Connection(Protocol):
    """A line-based channel to a KGP server. ``send`` is safe from several threads."""

    def send(self, line: str) -> None: ...

    def receive(self) -> str | None:
        """The next line without its line end; None once the server closed the connection."""
        ...

    def close(self) -> None: ...


class TcpConnection:
    """KGP over a TCP socket."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._sock.settimeout(None)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = self._sock.makefile("rb")
        self._lock = threading.Lock()

    def send(self, line: str) -> None:
        with self._lock:
            self._sock.sendall(line.encode() + b"\r\n")

    def receive(self) -> str | None:
        while True:
            try:
                raw = self._reader.readline(MAX_LINE + 2)
            except OSError:
                return None
            if not raw:
                return None
            if len(raw) > MAX_LINE + 1 and not raw.endswith(b"\n"):
                # Over the limit: skip to the line's end, a bounded read at a time.
                while raw and not raw.endswith(b"\n"):
                    try:
                        raw = self._reader.readline(MAX_LINE + 2)
                    except OSError:
                        return None
                log.warning("dropped a line longer than %d characters", MAX_LINE)
                continue
            return raw.decode(errors="replace").rstrip("\r\n")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


class WebSocketConnection:
    """KGP over a WebSocket: each sent line is one text message; received messages are read
    as one stream of lines (go-kgp's server reads them so, and writes a line a message)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        try:
            from websockets.sync.client import connect as ws_connect
        except ImportError as error:  # pragma: no cover - depends on the installed extras
            raise KgpError(
                "WebSocket servers need the 'websockets' package: pip install 'kalah-core[kgp]'",
                text=url,
            ) from error
        self._stack = contextlib.ExitStack()
        self._ws: Any = self._stack.enter_context(
            ws_connect(url, open_timeout=timeout, max_size=4 * MAX_LINE)
        )
        self._buffer = ""
        self._skipping = False
        """In a line over the limit: drop everything up to its end."""
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def send(self, line: str) -> None:
        with self._lock:
            try:
                self._ws.send(line + "\r\n")
            except OSError:
                raise
            except Exception as error:  # the library's ConnectionClosed: a closed socket
                raise ConnectionError(str(error)) from error

    def receive(self) -> str | None:
        while not self._lines:
            try:
                message = self._ws.recv()
            except Exception:  # the library's ConnectionClosed and OSError alike
                return None
            text = message.decode(errors="replace") if isinstance(message, bytes) else message
            self._buffer += text
            *done, self._buffer = self._buffer.split("\n")
            for part in done:
                if self._skipping:  # the end of a line over the limit
                    self._skipping = False
                elif len(part.rstrip("\r")) > MAX_LINE:
                    log.warning("dropped a line longer than %d characters", MAX_LINE)
                else:
                    self._lines.append(part.rstrip("\r"))
            if len(self._buffer) > MAX_LINE:
                if not self._skipping:
                    log.warning("dropped a line longer than %d characters", MAX_LINE)
                self._buffer = ""
                self._skipping = True
        return self._lines.pop(0)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken connection
            self._stack.close()


def connect(url: str, timeout: float = 10.0) -> Connection:
    """A connection to ``tcp://HOST[:PORT]``, ``ws://HOST:PORT/PATH`` or ``wss://...``."""
    parts = urlsplit(url)
    if parts.scheme == "tcp":
        if not parts.hostname:
            raise KgpError("a tcp:// address needs a host", text=url)
        return TcpConnection(parts.hostname, parts.port or DEFAULT_TCP_PORT, timeout)
    if parts.scheme in ("ws", "wss"):
        return WebSocketConnection(url, timeout)
    raise KgpError("a server is tcp://HOST:PORT, ws://HOST:PORT/socket or wss://...", text=url)


def check_server(url: str) -> str:
    """``url`` if it names a server :func:`connect` understands, else KgpError."""
    parts = urlsplit(url)
    if parts.scheme not in ("tcp", "ws", "wss") or not parts.hostname:
        raise KgpError("a server is tcp://HOST:PORT, ws://HOST:PORT/socket or wss://...", text=url)
    return url
