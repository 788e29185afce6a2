"""``kalah kgp``'s agent: its move choice (proven values, the opponent-may-err weighing, the
deep book, experience), its thinker, and conformance against the KGP server of
tests/kgp_server.py (over TCP and WebSocket)."""

from __future__ import annotations

import contextlib
import functools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from domain import cases
from hypothesis import given, settings
from hypothesis import strategies as st
from kgp_server import KgpTestServer, running

from kalah_core import Position, Rules, Side, deepbook, legal_moves, play, reference
from kalah_core.deepbook import key_position
from kalah_core.kgp.agent import Agent, AgentOptions, make_engine
from kalah_core.kgp.experience import Experience
from kalah_core.kgp.limits import default_tt_mb
from kalah_core.kgp.protocol import (
    KgpError,
    board_literal,
    parse_board,
    parse_command,
)
from kalah_core.kgp.records import GameRecord, legal_houses, mirrored, position_key
from kalah_core.kgp.thinker import LOSS, UNKNOWN, WIN, Candidate, Thinker, Turn, fallback_move
from kalah_core.results import Analysis, MoveValue
from kalah_core.solver import Engine

# ----------------------------------------------------------------------------- lines


def test_a_proven_win_beats_a_larger_estimate() -> None:
    proven = Candidate(1, value=2, lower=2, upper=2)
    hopeful = Candidate(2, value=20, lower=-30, upper=30)
    assert max([proven, hopeful], key=Candidate.key) is proven
    # A win proven only without majority (the database's search) counts the same.
    by_result = Candidate(3, value=1, lower=-30, upper=30, result=WIN)
    assert max([by_result, hopeful], key=Candidate.key) is by_result
    # A proven loss is the last resort.
    lost = Candidate(4, value=30, lower=-30, upper=-2)
    assert max([lost, hopeful], key=Candidate.key) is hopeful
    assert Candidate(5, result=LOSS).outcome == LOSS and Candidate(6).outcome == UNKNOWN


class _ScriptedEngine:
    """Stands in for an engine in the opponent-may-err weighing: each position's analysis is
    scripted (its best move, and its value for South), so the test fixes what the shallow
    searches vote and what the deep search says of each reply."""

    def __init__(self, best: dict[Position, int], south_value: dict[Position, int]) -> None:
        self.best, self.south_value = best, south_value
        self.asked: list[Position] = []
        self.searcher = SimpleNamespace(eval_kind=1)

    def analyse(self, position: Position, rules: Rules, **limits: object) -> Analysis:
        self.asked.append(position)
        value = self.south_value.get(position, 0)
        if position.to_move is Side.NORTH:
            value = -value
        moves = [m for m in legal_moves(position, rules) if isinstance(m, int)]
        first = self.best.get(position, moves[0])
        order = [first, *[m for m in moves if m != first]]
        mvs = [MoveValue(m, value, False, -99, 99, False, 0, position) for m in order]
        depth = limits.get("depth")
        assert isinstance(depth, int)
        return Analysis(value, False, -99, 99, [first], mvs, [], depth, 1, 0.0)

    def clear(self) -> None:
        pass

    def interrupt(self) -> None:
        pass


def _trap_setting() -> tuple[Position, Rules, dict[int, Position]]:
    """A 6-house position, South to move, whose moves 1, 2 and 3 pass the turn to North."""
    rules = Rules.preset("kalah", majority=True, houses=6, seeds=6)
    position = Position((3, 3, 2, 1, 0, 4), (4, 4, 4, 4, 4, 4), (10, 15), Side.SOUTH)
    after = {m: play(position, rules, m).after for m in (1, 2, 3)}
    assert all(a.to_move is Side.NORTH for a in after.values())
    return position, rules, after


def test_when_losing_the_agent_prefers_the_move_a_shallow_opponent_answers_badly() -> None:
    position, rules, after = _trap_setting()
    # Move 1 is estimated -3, move 2 -4, move 3 -9 (outside the window). After move 2 the
    # shallow searches answer with North's house 1, which the deep search says gives South +6;
    # after move 1 they answer with house 2, no better for South than the estimate; after
    # move 3 they would answer with a blunder worth +20, but move 3 is no candidate.
    reply = {1: 2, 2: 1, 3: 1}
    deep = {1: -3, 2: 6, 3: 20}
    best = {after[m]: reply[m] for m in (1, 2, 3)}
    values = {play(after[m], rules, reply[m]).after: deep[m] for m in (1, 2, 3)}

    def weigh(
        estimates: dict[int, int], *, trap: bool = True, exact: bool = False
    ) -> tuple[int, dict[int, Candidate]]:
        thinker = Thinker(Engine(tt_mb=16), time_per_move=1.0, result_db=False, trap=trap)
        deep_engine = _ScriptedEngine({}, values)
        thinker.engine = deep_engine  # type: ignore[assignment]
        thinker.shallow = _ScriptedEngine(best, {})  # type: ignore[assignment]
        lines = {
            m: Candidate(m, value=v, lower=v, upper=v) if exact else Candidate(m, value=v)
            for m, v in estimates.items()
        }
        job = Turn(2, position, lambda line: None, time.monotonic())
        if trap:
            thinker._weigh_traps(job, position, rules, lines, 12, time.monotonic() + 60)
        thinker.close()
        assert all(p not in after.values() for p in deep_engine.asked)  # replies only
        return max(lines.values(), key=Candidate.key).move, lines

    chosen, lines = weigh({1: -3, 2: -4, 3: -9, 6: -12})
    assert chosen == 2
    assert lines[2].trap > 0 and lines[1].trap == 0 and lines[3].trap == 0
    # Not losing: the best estimate stands, and so does a proven win.
    assert weigh({1: 0, 2: -1, 3: -9, 6: -12})[0] == 1
    proven = {1: -3, 2: -4, 3: -9, 6: -12}
    chosen, lines = weigh(proven)
    lines[1].lower = lines[1].upper = 1
    assert max(lines.values(), key=Candidate.key).move == 1
    # With the rule off, the best estimate.
    assert weigh({1: -3, 2: -4, 3: -9, 6: -12}, trap=False)[0] == 1
    # A proven draw: among the moves proven to draw, the one with chances; a move proven to
    # lose is never one, whatever its chances; an estimated draw is left alone.
    assert weigh({1: 0, 2: 0, 3: -9, 6: -12}, exact=True)[0] == 2
    assert weigh({1: 0, 2: -1, 3: -9, 6: -12}, exact=True)[0] == 1
    assert weigh({1: 0, 2: 0, 3: -9, 6: -12})[0] == 1
    # A reply worth only a seed more than the estimate is no chance (estimates are noisy).
    values[play(after[2], rules, 1).after] = -3
    assert weigh({1: -3, 2: -4, 3: -9, 6: -12})[0] == 1


def test_experience_repeats_a_won_line_and_leaves_a_lost_one() -> None:
    rules = Rules.preset("kalah", majority=True, houses=6, seeds=6)
    start = Position.start(rules)
    after = play(play(start, rules, 1).after, rules, 3).after  # North to move, mirrored below
    here = mirrored(after)
    experience = Experience()

    def record(move: int, margin: int | None, estimate: int | None = None) -> GameRecord:
        game = GameRecord(1, rules, start, False, margin=margin, estimate=estimate)
        game.decisions.append((position_key(here), move))
        return game

    experience.add(record(2, -8))  # lost after move 2
    experience.add(record(3, +4))  # won after move 3
    experience.add(record(4, None, estimate=-5))  # ended out of sight, estimated lost
    experience.add(record(5, None))  # out of sight, no estimate: not counted
    assert experience.best(here) == {2: "loss", 3: "win", 4: "loss"}
    assert experience.best(start) == {}
    # A move that lost once and won once leads to a win: the agent can take that line again.
    experience.add(record(2, +2))
    assert experience.best(here)[2] == "win"

    # The thinker plays a won move again, however it estimates it now ...
    def think(with_experience: Experience | None) -> str:
        sent: list[str] = []
        thinker = Thinker(Engine(tt_mb=16), time_per_move=0.3, result_db=False)
        thinker.experience = with_experience
        thinker.think(Turn(2, here, sent.append, time.monotonic()), rules)
        thinker.close()
        assert sent[-1] == "@2 yield"
        return sent[-2]

    own = int(think(None).split()[-1])
    other = 6 if own != 6 else 5
    won_elsewhere = Experience()
    won_elsewhere.add(record(other, +1))
    assert think(won_elsewhere) == f"@2 move {other}"
    # A game the opponent ended is closed only when the next game's first state comes (the
    # tracker, in on_start): its result counts in that very state.
    closed_late = Experience()
    sent: list[str] = []
    thinker = Thinker(Engine(tt_mb=16), time_per_move=0.3, result_db=False)
    thinker.experience = closed_late
    thinker.on_start = lambda job, rules: closed_late.add(record(other, +1))
    thinker.think(Turn(2, here, sent.append, time.monotonic()), rules)
    thinker.close()
    assert sent[-2:] == [f"@2 move {other}", "@2 yield"]
    # ... leaves a lost one where another is close ...
    lines = {m: Candidate(m, value=v) for m, v in {1: -4, 2: -3, 3: -5, 4: -3}.items()}
    lines[2].memory = lines[4].memory = -3.0
    assert max(lines.values(), key=Candidate.key).move == 1
    lines[3].won_before = True
    assert max(lines.values(), key=Candidate.key).move == 3
    # ... but never plays it over a move proven to win.
    lines[1].lower = lines[1].upper = 2
    assert max(lines.values(), key=Candidate.key).move == 1


def test_the_agent_learns_from_its_games() -> None:
    """Over two games the agent's decisions and results reach its experience: the second game
    starts from the same position, where the first game's move now carries its result."""
    with running(KgpTestServer(games=2, client_sides=(True, True), houses=4, seeds=3)) as server:
        agent = _play(server)
    _check_games(server, agent)
    assert agent.experience is not None
    start, _ = agent.records[0].decisions[0]
    assert start == position_key(Position((3,) * 4, (3,) * 4))
    # Both games' first moves, each with its game's result.
    assert sum(sum(c) for c in agent.experience.seen[start].values()) == 2
    assert all(len(r.decisions) >= 1 for r in agent.records)


def test_fallback_move_is_legal_on_any_board() -> None:
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 30)
        south = [rng.choice([0, 0, 1, 5, 30]) for _ in range(n)]
        south[rng.randrange(n)] += 1
        position = Position(tuple(south), (1,) * n, (0, 0), Side.SOUTH)
        assert fallback_move(position) in legal_houses(position)


def test_one_gib_mode_sizes() -> None:
    assert default_tt_mb(1 << 30) == 256
    assert default_tt_mb(64 << 30) == 1024


def test_a_stop_interrupts_the_search_at_once() -> None:
    """The thinker answers ``stop`` by interrupting the engine, even an analysis that starts
    just after the stop (which clears the interrupt): the job ends long before its time."""
    engine = Engine(tt_mb=16)
    thinker = Thinker(engine, time_per_move=600.0, result_db=False)
    sent: list[str] = []
    rules = Rules.preset("kalah", majority=True, houses=8, seeds=8)
    job = Turn(2, Position.start(rules), sent.append, time.monotonic())
    ended = threading.Event()
    thinker.on_done = lambda job, rules: ended.set()
    thinker.submit(job)
    while not sent:  # the quick move is out: the deepening runs
        time.sleep(0.01)
    thinker.stop(2)
    assert ended.wait(120)
    thinker.close()
    assert sent[0].startswith("@2 move ")
    assert not any("yield" in line for line in sent)  # a stopped turn sends nothing more


def test_the_thinker_ponders_until_the_next_state() -> None:
    """After its move the thinker searches the opponent's position until the next state,
    which interrupts it and is answered as usual."""
    engine = Engine(tt_mb=16)
    thinker = Thinker(engine, time_per_move=0.2, result_db=False)
    rules = Rules.preset("kalah", majority=True, houses=6, seeds=6)
    # No move of South's ends in its store: the turn passes whatever the thinker plays.
    start = Position((1, 1, 1, 1, 3, 2), (3, 3, 3, 3, 3, 3), (20, 20), Side.SOUTH)
    assert not any(play(start, rules, m).extra_turn for m in legal_moves(start, rules))
    first: list[str] = []
    thinker.submit(Turn(2, start, first.append, time.monotonic()))
    while not (thinker.current is not None and thinker.current.ponder):
        time.sleep(0.01)
    assert thinker.idle()
    assert first[-1] == "@2 yield"
    move = int(first[-2].split()[-1])
    after = play(start, rules, move).after
    reply = next(m for m in legal_moves(after, rules) if not play(after, rules, m).extra_turn)
    state = play(after, rules, reply).after
    second: list[str] = []
    thinker.submit(Turn(4, state, second.append, time.monotonic()))
    while "@4 yield" not in second:
        time.sleep(0.01)
    thinker.close()
    assert second[0].startswith("@4 move ")


# ----------------------------------------------------------------------------- conformance


def _play(server: KgpTestServer, engine: Engine | None = None, **options: object) -> Agent:
    """Run the agent in this process against ``server`` until the server says goodbye."""
    opts = AgentOptions(server=server.url, time_per_move=0.15, threads=1, tt_mb=16)
    for key, value in options.items():
        setattr(opts, key, value)
    agent = Agent(opts, engine or Engine(tt_mb=opts.tt_mb, threads=1), engine is not None)
    finished = threading.Event()
    thread = threading.Thread(target=lambda: (agent.run(), finished.set()), daemon=True)
    thread.start()
    assert finished.wait(300), "the agent did not finish"
    return agent


def _check_games(server: KgpTestServer, agent: Agent) -> None:
    """Every game finished with no illegal move, and the agent's records agree."""
    assert server.games and all(g.game.outcome() is not None for g in server.games)
    for log in server.games:
        assert not log.illegal and not log.resigned
        for state in log.states:
            assert all(move in state.legal for _, move in state.moves)
    assert not server.errors
    assert agent.summary.games == len(server.games)
    for log, record in zip(server.games, agent.records, strict=True):
        assert record.we_south == log.client_south
        if record.margin is not None:
            assert record.margin == log.margin
            assert record.notation() == log.game.fi()
        else:  # the opponent's move ended it: the agent's record stops at its own last move
            assert log.game.fi().startswith(record.notation().rstrip("-"))


def test_the_deep_book_decides_the_opening_moves() -> None:
    """Where the shipped deep book holds a KGP 6x6 state, the agent plays the book's best move
    (from searches of millions of nodes) rather than its own short search's: checked on the
    records whose best move is unique and which a depth-8 search answers otherwise."""
    rules = Rules.preset("kgp", houses=6, seeds=6)
    shipped = deepbook.shipped()
    engine, _ = make_engine(AgentOptions("tcp://localhost", tt_mb=16, threads=1))
    assert engine.deep_book is not None
    checked = 0
    for key in sorted(shipped.sections[rules.key].records):
        position = key_position(key, rules)
        booked = shipped.analysis(position, rules)
        assert booked is not None
        first, second = booked.moves[0], booked.moves[1]
        shallow = Engine(tt_mb=16).analyse(position, rules, depth=8, pv_limit=1)
        if first.value == second.value or shallow.moves[0].move == first.move:
            continue
        sent: list[str] = []
        thinker = Thinker(engine, time_per_move=0.3, result_db=False)
        thinker.think(Turn(2, position, sent.append, time.monotonic()), rules)
        thinker.close()
        assert sent[-2:] == [f"@2 move {first.move}", "@2 yield"], key.hex()
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def test_north_plays_the_deep_books_second_move_against_minmax_10s_line() -> None:
    """After go-kgp MinMax-10's 1, 3 and North's book move 2, South's 4 leaves North a
    near-tie that short searches answer with 1, 2 or 4 (4 lost every first game as North);
    the shipped deep book's record there (``kalah book deep --after "13-2, 4-"``, depth 24)
    ranks 5 first, and the agent plays it."""
    from kalah_core.game import Game

    rules = Rules.preset("kgp", houses=6, seeds=6)
    position = Game.parse_fi("13-2, 4-", rules).position
    booked = deepbook.shipped().analysis(position, rules)
    assert booked is not None and booked.moves[0].move == 5
    assert booked.moves[0].value > booked.moves[1].value
    shallow = Engine(tt_mb=16).analyse(position, rules, depth=12, pv_limit=1)
    assert shallow.moves[0].move != 5
    engine, _ = make_engine(AgentOptions("tcp://localhost", tt_mb=16, threads=1))
    sent: list[str] = []
    thinker = Thinker(engine, time_per_move=0.3, result_db=False)
    thinker.think(Turn(7, position, sent.append, time.monotonic()), rules)
    thinker.close()
    assert sent[-2:] == ["@7 move 5", "@7 yield"]


def test_the_agent_follows_a_deep_book_record_over_its_own_search() -> None:
    """A book whose record at the KGP 6x6 start ranks first the move that the agent's own
    search ranks last: the agent plays the book's move (its search, 0.3 s here, stays far
    below the record's depth), so the book is what decides, not a search that agrees."""
    rules = Rules.preset("kgp", houses=6, seeds=6)
    start = Position.start(rules)
    section = deepbook.shipped().sections[rules.key]
    record = section.records[deepbook.deep_key(start, rules)]
    own = Engine(tt_mb=16).analyse(start, rules, depth=12, pv_limit=1)
    worst = own.moves[-1].move
    assert isinstance(worst, int) and worst != own.moves[0].move
    planted = replace(
        record,
        moves=tuple(
            replace(m, estimate=record.estimate + 5 if m.house == worst else m.estimate)
            for m in record.moves
        ),
    )
    book = deepbook.DeepBook([replace(section, records={**section.records, planted.key: planted})])
    engine = Engine(tt_mb=16, threads=1, deep_book=book)
    sent: list[str] = []
    thinker = Thinker(engine, time_per_move=0.3, result_db=False)
    thinker.think(Turn(2, start, sent.append, time.monotonic()), rules)
    thinker.close()
    assert sent[-2:] == [f"@2 move {worst}", "@2 yield"]
    # the same agent without the book plays its own choice
    sent.clear()
    thinker = Thinker(Engine(tt_mb=16, threads=1), time_per_move=0.3, result_db=False)
    thinker.think(Turn(2, start, sent.append, time.monotonic()), rules)
    thinker.close()
    assert sent[-2:] != [f"@2 move {worst}", "@2 yield"]


# ----------------------------------------------------------------------------- a hostile server


class _Running:
    """The agent in a thread of this process; ``error`` is what ended ``run`` with a raise."""

    def __init__(self, url: str, **options: object) -> None:
        opts = AgentOptions(server=url, time_per_move=0.2, threads=1, tt_mb=16)
        for key, value in options.items():
            setattr(opts, key, value)
        self.agent = Agent(opts, Engine(tt_mb=16, threads=1))
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.agent.run()
        except BaseException as error:  # the test reports it
            self.error = error

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.agent.stop()
        self.thread.join(60)


def _wait_for(condition: Callable[[], bool], what: str, guard_s: float = 60) -> None:
    """Poll ``condition`` until it holds; ``guard_s`` only stops a hang (no timing is asserted)."""
    end = time.monotonic() + guard_s
    while not condition():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def test_only_the_latest_waiting_state_is_answered() -> None:
    """States 4, 6 and 8 come while state 2 is being answered: 4 and 6 are stale when the
    thinker is free again, and only 8 is answered."""
    thinker = Thinker(Engine(tt_mb=16), time_per_move=0.2, result_db=False)
    hold, held = threading.Event(), threading.Event()

    def on_start(job: Turn, rules: Rules) -> None:
        if job.id == 2:
            held.set()
            assert hold.wait(60)

    thinker.on_start = on_start
    sent: list[str] = []
    start = parse_board("<6,0,0,4,4,4,4,4,4,4,4,4,4,4,4>")
    thinker.submit(Turn(2, start, sent.append, time.monotonic()))
    assert held.wait(60)  # the thinker is inside state 2's search
    for ident in (4, 6, 8):
        thinker.submit(Turn(ident, start, sent.append, time.monotonic()))
    hold.set()
    _wait_for(lambda: "@8 yield" in sent, "state 8 was not answered")
    thinker.close()
    assert not any(line.startswith(("@4 ", "@6 ")) for line in sent)


def test_a_closed_socket_never_kills_the_thinker() -> None:
    """Finding 47.5: a BrokenPipeError in a send killed the thinker thread (its fallback move
    failed the same way inside the handler), and no later state was answered."""
    thinker = Thinker(Engine(tt_mb=16), time_per_move=0.2, result_db=False)
    start = parse_board("<6,0,0,4,4,4,4,4,4,4,4,4,4,4,4>")
    failed: list[str] = []

    def broken(line: str) -> None:
        failed.append(line)
        raise BrokenPipeError(32, "Broken pipe")

    thinker.submit(Turn(2, start, broken, time.monotonic()))
    _wait_for(lambda: bool(failed) and thinker.idle(), "state 2 was not tried")
    sent: list[str] = []
    thinker.submit(Turn(4, start, sent.append, time.monotonic()))
    _wait_for(
        lambda: "@4 yield" in sent or not thinker.thread.is_alive(), "state 4 was not answered"
    )
    assert thinker.thread.is_alive()
    thinker.close()


class _StubConnection:
    """A connection whose lines are given and whose ``pong`` fails as on a closed socket."""

    def __init__(self, lines: list[str], broken: bool) -> None:
        self.lines = lines
        self.broken = broken
        self.sent: list[str] = []

    def send(self, line: str) -> None:
        if self.broken and "pong" in line:
            raise BrokenPipeError(32, "Broken pipe")
        self.sent.append(line)

    def receive(self) -> str | None:
        return self.lines.pop(0) if self.lines else None

    def close(self) -> None:
        pass


def test_a_closed_socket_never_kills_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pong on a connection the server closed (BrokenPipeError) ended ``kalah kgp`` with a
    traceback; now the connection counts as dropped and the agent reconnects."""
    first = _StubConnection(["kgp 1 0 1", "2 ping", "4 ping"], broken=True)
    second = _StubConnection(["kgp 1 0 1", "6 ping", "goodbye"], broken=False)
    stubs = [first, second]
    monkeypatch.setattr("kalah_core.kgp.agent.connect", lambda url: stubs.pop(0))
    monkeypatch.setattr("kalah_core.kgp.agent.RECONNECT_DELAYS", (0.0,))
    agent = Agent(AgentOptions(server="tcp://stub", tt_mb=1), Engine(tt_mb=1))
    agent.run()
    assert "@6 pong" in second.sent and not stubs


@functools.cache
def _fuzz_agent() -> Agent:
    """One agent for every example (its thinker searches the states it is sent)."""
    return Agent(AgentOptions(server="tcp://stub", time_per_move=0.05, tt_mb=1), Engine(tt_mb=1))


def _board_line(position: Position) -> str:
    return f"2 state {board_literal(position)}"


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=300),
        cases().map(lambda case: _board_line(case.position)),  # the API's whole domain
        st.builds(
            lambda name, args: " ".join([name, *args]),
            st.sampled_from(
                ["ping", "state", "stop", "goodbye", "kgp", "error", "set", "7@3 stop", "9" * 4400]
            ),
            st.lists(
                st.one_of(
                    st.from_regex(r"<[0-9, ]{0,60}>", fullmatch=True),
                    st.from_regex(r"[0-9]{1,30}", fullmatch=True),
                    st.integers(4000, 5000).map(lambda n: "9" * n),  # Python's int limit: 4,300
                    st.text(max_size=20),
                ),
                max_size=4,
            ),
        ),
    )
)
def test_the_agents_line_parser_takes_any_line(line: str) -> None:
    """Any line, and a state of any position the API declares (1-12 houses, 0-600 seeds): the
    parser raises nothing but KgpError, and the agent's handling of the line raises nothing."""
    try:
        command = parse_command(line)
    except KgpError:
        command = None
    if command is not None and command.name == "state" and command.args:
        with contextlib.suppress(KgpError):
            parse_board(command.args[0])
    agent = _fuzz_agent()
    agent._session(_StubConnection([line], broken=False))  # reads the line, then the end
    assert agent.thinker.thread.is_alive()


def test_the_agent_attaches_the_plain_and_the_majority_databases_of_its_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain ``kalah`` database (each move's result) and the server's own rules' under
    majority, one for each total of seeds; not a database of other rules. The majority one
    makes the margin's search exact where the position's seeds reach it."""
    from kalah_core.egdb import build, default_path

    plain = Rules(houses=3)
    server = Rules.preset("kgp", houses=3, seeds=2)  # 12 seeds in a game
    other = Rules(houses=3, seeds=2, majority=True, capture="always")
    for rules, seeds in ((plain, 4), (server, 5), (other, 5)):
        build(default_path(rules, seeds, tmp_path), rules, seeds, progress=False)
    monkeypatch.setenv("KALAH_EGDB_PATH", str(tmp_path))
    engine, result_db = make_engine(AgentOptions("tcp://localhost", tt_mb=8, threads=1), 3)
    assert result_db
    assert sorted(str(db.key) for db in engine.databases) == [
        "h3-nonempty-either-owner",
        "h3-nonempty-either-owner-majority12",
    ]
    position = Position((2, 1, 2), (0, 1, 1), (3, 2))  # 7 seeds in houses, 12 in the game
    answer = engine.analyse(position, server)
    alone = Engine(tt_mb=8).analyse(position, server)
    assert answer.exact and answer.value == alone.value == reference.value(position, server)
    assert answer.nodes < alone.nodes  # the children read from the database
