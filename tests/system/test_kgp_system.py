"""The system tests of tests/engine/test_kgp_agent.py, whose
helpers they import: processes, servers or long searches."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from figures import measured
from kgp_server import KgpTestServer, ScriptedServer, running
from test_kgp_agent import _check_games, _play, _Running, _wait_for

from kalah_core import Rules
from kalah_core.egdb import EndgameDatabase, build
from kalah_core.kgp.protocol import (
    MAX_LINE,
    connect,
)
from kalah_core.solver import Engine


def test_full_games_weighing_the_opponents_chances() -> None:
    """With --opponent-may-err the agent still plays only legal moves, on both sides, and
    its records follow the server's games."""
    with running(KgpTestServer(games=2, client_sides=(True, False))) as server:
        agent = _play(server, opponent_may_err=True, time_per_move=0.3)
    assert agent.thinker.trap
    _check_games(server, agent)


@pytest.mark.parametrize("websocket", [False, True], ids=["tcp", "websocket"])
def test_full_games_on_both_sides(websocket: bool) -> None:
    server = KgpTestServer(games=2, client_sides=(True, False), websocket=websocket)
    with running(server):
        agent = _play(server)
    _check_games(server, agent)
    assert [g.client_south for g in server.games] == [True, False]
    # The opponent plays its lowest house: the agent wins both.
    assert all(g.margin > 0 for g in server.games)
    assert server.client_info["info:name"] == "kalah-core"
    # Every state had a move within the turn, the first of them the quick one.
    states = [s for g in server.games for s in g.states]
    assert all(s.moves for s in states)
    assert all(s.yielded for s in states)
    firsts = sorted(s.moves[0][0] * 1000 for s in states)
    measured(
        f"kalah kgp ({'websocket' if websocket else 'tcp'}): first move of {len(firsts)} states "
        f"after a median {firsts[len(firsts) // 2]:.1f} ms, at most {firsts[-1]:.1f} ms"
    )


@pytest.mark.parametrize(("houses", "seeds"), [(10, 10), (12, 12)])
def test_full_games_on_the_big_tournament_boards(houses: int, seeds: int) -> None:
    """The 10x10 and 12x12 tournament boards (beyond the one-word board) are searched and
    played to the end on both sides, every move legal."""
    server = KgpTestServer(games=2, client_sides=(True, False), houses=houses, seeds=seeds)
    with running(server):
        agent = _play(server)
    _check_games(server, agent)
    assert all(g.margin > 0 for g in server.games)  # against the lowest-house opponent


def test_plays_with_an_endgame_database(tmp_path: Path) -> None:
    """On 6 houses the agent proves results under plain ``kalah`` with the database."""
    plain = Rules.preset("kalah", houses=6)
    path = tmp_path / "h6.egdb"
    build(path, plain, 6, progress=False, threads=1)
    engine = Engine(tt_mb=16, databases=[EndgameDatabase.open(path, plain)])
    server = KgpTestServer(games=2, client_sides=(True, False))
    with running(server):
        agent = _play(server, engine)
    _check_games(server, agent)
    assert all(g.margin > 0 for g in server.games)


def test_pong_while_searching() -> None:
    """The server pings once the first move of a state is in, while the agent searches
    (it has 2 s); the pong comes back before the agent ends its turn."""
    server = KgpTestServer(games=1, ping_after_move=True, stop_after=30)
    with running(server):
        agent = _play(server, time_per_move=2.0)
    _check_games(server, agent)
    states = [s for g in server.games for s in g.states]
    pinged = [s for s in states if s.pings]
    assert pinged and all(latency is not None for s in pinged for _, latency in s.pings)
    # A pong came while the turn was still on (before the agent's yield or the server's stop):
    # the agent answers pings while it searches, not only once its turn is over. Told by the
    # order of events, not by clock readings (a turn proven at once may end before its ping).
    assert any(s.pong_before_end for s in pinged)


def test_several_moves_then_stop() -> None:
    """The server ends each turn with ``stop`` long before the agent's own time is up: the last
    move before it counts, none comes after it, and the agent's record follows the server."""
    server = KgpTestServer(games=1, stop_after=0.4)
    with running(server):
        agent = _play(server, time_per_move=30.0)
    _check_games(server, agent)
    states = [s for g in server.games for s in g.states]
    assert all(s.stopped and not s.yielded for s in states if s.moves and not s.yielded)
    assert all(not s.after_stop for s in states)
    assert any(len(s.moves) >= 2 for s in states), "no state got an improved move"


@pytest.mark.parametrize("websocket", [False, True], ids=["tcp", "websocket"])
def test_reconnects_after_a_dropped_connection(websocket: bool) -> None:
    server = KgpTestServer(games=1, drop_after_states=3, websocket=websocket)
    with running(server):
        agent = _play(server, token="s3cret")
    assert server.connections == 2
    assert server.client_info["auth:token"] == "s3cret"
    _check_games(server, agent)


def test_games_n_leaves_between_games_without_giving_one_up() -> None:
    """With ``--games 1`` on a server that pings between games (as go-kgp does before it
    schedules the next), the agent leaves after the first game without starting a second."""
    server = KgpTestServer(games=3, ping_between_games=True)
    with running(server):
        agent = _play(server, games=1)
    assert len(server.games) == 1 and server.games[0].game.outcome() is not None
    assert agent.summary.games == 1
    assert not server.games[0].illegal


def test_malformed_lines_are_ignored() -> None:
    server = KgpTestServer(games=1, malformed=True)
    with running(server):
        agent = _play(server)
    _check_games(server, agent)


def test_cli_plays_and_prints_a_summary() -> None:
    server = KgpTestServer(games=1)
    with running(server):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kalah_core",
                "kgp",
                server.url,
                "--time-per-move",
                "0.1",
                "--threads",
                "1",
                "--tt-mb",
                "16",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    import json

    summary = json.loads(done.stdout)
    assert summary["games"] == 1 and summary["wins"] == 1
    assert "game 1 (6 houses, 3 seeds; we were South): win" in done.stderr


def test_numbers_of_thousands_of_digits_are_ignored() -> None:
    """Finding 47.5: a number of more than 4,300 digits (Python's int-string limit) in an id, a
    reference or a board killed the agent with a traceback. Each such line is now ignored and
    the agent answers what follows."""
    digits = "9" * 5000
    with ScriptedServer() as server:
        running_agent = _Running(server.url)
        server.handshake()
        server.send(f"{digits} ping")
        server.send(f"2@{digits} stop")
        server.send(f"4 state <6,0,0,{digits},1,1,1,1,1,1,1,1,1,1,1>")
        server.send(f"6 state <3,0,0,1,1,1,1,1,1>{digits}")
        server.send("8 ping")
        server.expect("@8 pong", alive=running_agent.alive)
        server.send("10 state <3,0,0,1,1,1,1,1,1>")
        lines = server.expect("@10 yield", alive=running_agent.alive)
        assert any(line.startswith("@10 move ") for line in lines)
        running_agent.stop()
    assert running_agent.error is None


def test_an_over_long_line_is_dropped_whole() -> None:
    """Finding 47.5: a line over the limit was split, and its tail read as a command of its own
    (the agent answered a smuggled ``state``). The whole line is dropped now: the smuggled
    ``ping`` gets no pong, the next line is read as usual."""
    with ScriptedServer() as server:
        running_agent = _Running(server.url)
        server.handshake()
        server.send_raw(b"x" * (MAX_LINE + 2) + b"5 ping\r\n")
        server.send_raw(b"y" * (3 * MAX_LINE) + b" 7 state <3,0,0,1,1,1,1,1,1>\r\n")
        server.send("8 ping")
        lines = server.expect("@8 pong", alive=running_agent.alive)
        assert "@5 pong" not in lines
        server.send("10 state <3,0,0,1,1,1,1,1,1>")
        lines = server.expect("@10 yield", alive=running_agent.alive)
        running_agent.stop()
    assert not any(line.startswith("@7 ") for line in server.seen)
    assert running_agent.error is None


@pytest.mark.parametrize("websocket", [False, True], ids=["tcp", "websocket"])
def test_a_transport_drops_an_over_long_line_whole(websocket: bool) -> None:
    """Both transports: the line after an over-long one (sent in pieces, its tail a command) is
    the first line the agent reads."""
    pieces = ["x" * 10000, "x" * 10000, "5 ping\r\n6 ping\r\n"]
    if websocket:
        from websockets.sync.server import serve

        def handler(ws: object) -> None:
            for piece in pieces:
                ws.send(piece)  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):  # the client's close ends it
                ws.recv()  # type: ignore[attr-defined]

        server = serve(handler, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        conn = connect(f"ws://127.0.0.1:{server.socket.getsockname()[1]}/socket")
        try:
            assert conn.receive() == "6 ping"
        finally:
            conn.close()
            server.shutdown()
    else:
        with ScriptedServer() as scripted:
            conn = connect(scripted.url)
            scripted.accept()
            for piece in pieces:
                scripted.send_raw(piece.encode())
            try:
                assert conn.receive() == "6 ping"
            finally:
                conn.close()


def test_a_flood_of_states_keeps_one_and_goodbye_stops_the_search() -> None:
    """Finding 47.5: every state waited in an unbounded queue (254 MB after a flood), each then
    searched for its full time, for minutes after ``goodbye``. Now a newer state replaces a
    waiting one, and ``goodbye`` stops the search: once the flood and the goodbye are read
    (the pong after them says so), the thinker goes quiet with nothing waiting."""
    board = "<6,0,0,4,4,4,4,4,4,4,4,4,4,4,4>"
    flood = b"".join(f"{2 * i} state {board}\r\n".encode() for i in range(1, 20001))
    with ScriptedServer() as server:
        running_agent = _Running(server.url, time_per_move=5.0)
        server.handshake()
        server.send_raw(flood + b"goodbye\r\n50001 ping\r\n")
        server.expect("@50001 pong", alive=running_agent.alive)
        thinker = running_agent.agent.thinker
        _wait_for(
            lambda: thinker.current is None and thinker.idle(),
            "the thinker still searches stale states after goodbye",
        )
        server.send("50003 ping")
        after = server.expect("@50003 pong", alive=running_agent.alive)
        running_agent.stop()
    # What the thinker sent once goodbye was read: at most the end of the state it was in.
    answered = {line.split()[0] for line in after if line.startswith("@") and " move " in line}
    assert len(answered) <= 1, f"{len(answered)} stale states answered after goodbye"
    assert running_agent.error is None
