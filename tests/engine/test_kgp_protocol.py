"""``kalah kgp``'s protocol and its tracking of games: the lines and boards of the Kalah Game
Protocol, and how the agent rebuilds both sides' games from the states a server sends."""

from __future__ import annotations

import itertools
import random
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kalah_core import Game, Position, Rules, Side, legal_moves, play
from kalah_core.kgp.agent import Agent, AgentOptions
from kalah_core.kgp.protocol import (
    KgpError,
    board_literal,
    connect,
    format_command,
    kgp_rules,
    parse_board,
    parse_command,
    quote,
)
from kalah_core.kgp.records import mirrored
from kalah_core.kgp.tracker import Tracker, bridge
from kalah_core.solver import Engine

# ----------------------------------------------------------------------------- lines


def test_parse_command_ids_refs_and_arguments() -> None:
    assert parse_command("kgp 1 0 1") == parse_command("kgp 1 0 1\r\n")
    c = parse_command("4 state <3,0,0,3,3,3,3,3,3>\r\n")
    assert (c.id, c.ref, c.name, c.args) == (4, None, "state", ("<3,0,0,3,3,3,3,3,3>",))
    c = parse_command("6@4 stop")
    assert (c.id, c.ref, c.name, c.args) == (6, 4, "stop", ())
    c = parse_command("@8 move 3")
    assert (c.id, c.ref, c.name, c.args) == (None, 8, "move", ("3",))
    c = parse_command('set info:comment "say \\"hi\\"\\n" -1 +2.5')
    assert c.args == ("info:comment", 'say "hi"\n', "-1", "+2.5")


@pytest.mark.parametrize(
    "line", ["", "   ", "@@ this is not a command", '7 set info:comment "unterminated', "x" * 20000]
)
def test_parse_command_rejects_malformed_lines(line: str) -> None:
    with pytest.raises(KgpError):
        parse_command(line)


def test_format_command_round_trips() -> None:
    line = format_command("set", "info:name", quote('a "b" \\ c\td'), id=3, ref=2)
    assert line == '3@2 set info:name "a \\"b\\" \\\\ c\\td"'
    assert parse_command(line).args == ("info:name", 'a "b" \\ c\td')
    assert format_command("move", 4, ref=10) == "@10 move 4"
    assert format_command("goodbye") == "goodbye"


def test_boards_are_south_first_each_side_from_its_own_left() -> None:
    # The spec's example: 3 houses, stores 10 and 2, South 2 1 3, North 4 2 0.
    position = parse_board("<3,10,2,2,1,3,4,2,0>")
    assert position == Position((2, 1, 3), (4, 2, 0), (10, 2), Side.SOUTH)
    assert board_literal(position) == "<3,10,2,2,1,3,4,2,0>"
    for bad in ("<3,1,2>", "<0,0,0>", "3,0,0,1,1,1,1,1,1", "<2,0,0,1,x,1,1>"):
        with pytest.raises(KgpError):
            parse_board(bad)


def test_kgp_rules_are_kalah_plus_majority() -> None:
    rules = kgp_rules(parse_board("<6,0,0,6,6,6,6,6,6,6,6,6,6,6,6>"))
    assert rules == Rules.preset("kalah", majority=True, houses=6, seeds=6)


def test_connect_refuses_other_schemes() -> None:
    with pytest.raises(KgpError):
        connect("http://localhost:2671")


def test_a_server_that_is_not_there_is_an_error_at_once() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = Agent(AgentOptions(server=f"tcp://127.0.0.1:{port}", tt_mb=1), Engine(tt_mb=1))
    with pytest.raises(KgpError, match="cannot connect"):
        agent.run()


# ----------------------------------------------------------------------------- tracking


def _random_game(rules: Rules, seed: int) -> list[tuple[Position, int]]:
    """The (position, move) pairs of a random game."""
    rng = random.Random(seed)
    position = Position.start(rules)
    line = []
    while legal_moves(position, rules):
        move = rng.choice([m for m in legal_moves(position, rules) if isinstance(m, int)])
        line.append((position, move))
        position = play(position, rules, move).after
    return line


@pytest.mark.parametrize("seed", range(6))
def test_tracker_rebuilds_both_sides_games_from_the_states_alone(seed: int) -> None:
    """Feed the tracker what a server sends South and North (mirrored) in a random game;
    it finds the moves it was not shown, and the record replays to the real game."""
    rules = Rules.preset("kalah", majority=True, houses=4, seeds=3)
    line = _random_game(rules, seed)
    real = Game(rules)
    for _, move in line:
        real.push(move)
    for we_south in (True, False):
        ended = []
        tracker = Tracker(ended.append)
        side = Side.SOUTH if we_south else Side.NORTH
        for position, move in line:
            if position.to_move is not side or len(legal_moves(position, rules)) < 2:
                continue  # the server plays a single legal move without asking
            state = position if we_south else mirrored(position)
            tracker.observe(state, rules)
            tracker.played(move, None, None)
        tracker.finish()
        records = [r for r in ended if r.moves]
        assert len(records) == 1
        record = records[0]
        assert record.we_south == we_south
        replay = Game(rules, record.start)
        for move in record.moves:
            replay.push(move)
        assert record.moves == real.moves[: len(record.moves)]
        if record.margin is not None:  # the agent's own move ended the game
            assert replay.outcome() == real.outcome()


def test_tracker_starts_a_new_game_on_an_unreachable_state() -> None:
    rules = Rules.preset("kalah", majority=True, houses=4, seeds=3)
    ended = []
    tracker = Tracker(ended.append)
    start = Position.start(rules)
    assert tracker.observe(start, rules)
    tracker.played(1, None, None)
    assert tracker.observe(start, rules)  # the start again: a second game
    assert len(ended) == 1 and ended[0].moves == [1] and ended[0].result == "unknown"
    # After a reconnection, the same state again is that state sent again.
    tracker.played(2, None, None)
    tracker.reconnected = True
    assert not tracker.observe(start, rules)
    assert len(ended) == 1


def test_bridge_finds_the_opponents_chain_and_our_forced_moves() -> None:
    rules = Rules.preset("kalah", majority=True, houses=6, seeds=4)
    line = _random_game(rules, 11)
    south_turns = [
        i
        for i, (p, _) in enumerate(line)
        if p.to_move is Side.SOUTH and len(legal_moves(p, rules)) > 1
    ]
    for a, b in itertools.pairwise(south_turns):
        before, move = line[a]
        after = line[b][0]
        path = bridge(before, after, rules, [move])
        assert path is not None and path[0] == move
        position = before
        for m in path:
            position = play(position, rules, m).after
        assert position == after


# ----------------------------------------------------------------------------- majority


@settings(max_examples=60)
@given(
    houses=st.integers(2, 4),
    counts=st.lists(st.integers(0, 3), min_size=8, max_size=8),
    stores=st.tuples(st.integers(0, 6), st.integers(0, 6)),
)
def test_majority_never_changes_who_wins(
    houses: int, counts: list[int], stores: tuple[int, int]
) -> None:
    """Why the databases of the plain rules decide results under majority: the sign of the
    exact value is the same with and without the option."""
    south, north = tuple(counts[:houses]), tuple(counts[4 : 4 + houses])
    position = Position(south, north, stores, Side.SOUTH)
    plain = Rules.preset("kalah", houses=houses)
    majority = plain.replace(majority=True)
    engine = Engine(tt_mb=1)
    a = engine.analyse(position, plain)
    b = engine.analyse(position, majority)
    assert a.exact and b.exact
    assert (a.value > 0) - (a.value < 0) == (b.value > 0) - (b.value < 0)


# ----------------------------------------------------------------------------- choosing
