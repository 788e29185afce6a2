"""The KGP agent's pondering against its root comparison: ``Searcher.same_draft`` off and on.

While the opponent thinks, ``kalah kgp`` deepens on the position its move left (pondering), so
the next state's search starts on a warm table. The ponder looks deepest along the line it
expects; with table entries that cut any shallower search (``same_draft`` off), the state's
depth-limited search then weighs that line at the ponder's depth and the other moves at its
own, and where estimates drift with depth it picks by the drift.

For every state of the agent's side that follows an opponent's turn in the games of
``--games`` (by default ``data/kgp_lost_games.json``: the games the agent lost to go-kgp's
bots, as docs/kgp.md gives them), this ponders on the position the opponent moved from (the
agent's deepening, ``--ponder`` seconds), then answers the state with the agent's own
``Thinker`` (1.95 s of the server's 2 s, one thread), once with ``same_draft`` off and once on,
each on a fresh table. Where the two choose differently, both moves are scored by a fresh
search ``--ref-depth`` sowings deep; a move's loss is the best move's value there minus its
own. Prints each such state, the total and mean loss of each setting, and the median depth
the state's search reached.

    python benchmarks/ponder_draft.py [--ponder 4] [--ref-depth 12] [--limit N]

About 12 s a state plus the reference searches (~10 s each on 12x12); the three default games
hold 174 such states (about 40 minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from kalah_core import Game, Position, Rules, Side
from kalah_core.game import legal_moves
from kalah_core.kgp.agent import AgentOptions, make_engine
from kalah_core.kgp.records import mirrored
from kalah_core.kgp.thinker import QUICK_DEPTH, Thinker, Turn
from kalah_core.results import Analysis
from kalah_core.solver import Engine

GAMES = Path(__file__).parent / "data" / "kgp_lost_games.json"
SERVER_TIMEOUT_S = 2.0
AGENT_TIME_S = 1.95  # what kgp_match.py gives the agent


def states(rules: Rules, moves: str, side: Side) -> list[tuple[Position, Position]]:
    """(the position the opponent moved from, the state) for each of ``side``'s states with a
    choice that follows an opponent's turn."""
    line = Game(rules).push_fi(moves)
    found: list[tuple[Position, Position]] = []
    turn_start: Position | None = None
    previous: Position | None = None
    for result in line:
        position = result.before
        if position.to_move is not side and (previous is None or previous.to_move is side):
            turn_start = position
        if (
            position.to_move is side
            and previous is not None
            and previous.to_move is not side
            and turn_start is not None
            and len(legal_moves(position, rules)) > 1
        ):
            found.append((turn_start, position))
        previous = position
    return found


def answer(
    rules: Rules, ponder_from: Position, state: Position, same_draft: bool, ponder_s: float
) -> tuple[int, int]:
    """The agent's move at ``state`` after pondering ``ponder_from``, and the deepest depth its
    state search completed."""
    engine, _ = make_engine(AgentOptions(server="-", tt_mb=256, threads=1), rules.houses)
    engine.searcher.same_draft = same_draft
    start, depth = time.monotonic(), QUICK_DEPTH
    while (left := ponder_s - (time.monotonic() - start)) > 0:
        a = engine.analyse(ponder_from, rules, depth=depth, time_ms=left * 1000, pv_limit=1)
        if a.exact or (a.depth or 0) < depth:
            break
        depth += 1
    reached = [0]
    analyse = engine.analyse

    def counting(position: Position, rules: Rules, **kwargs: Any) -> Analysis:
        result = analyse(position, rules, **kwargs)
        asked = kwargs.get("depth")
        if asked is not None and (result.depth or 0) >= asked:
            reached[0] = max(reached[0], asked)
        return result

    engine.analyse = counting  # type: ignore[method-assign]
    thinker = Thinker(engine, AGENT_TIME_S, result_db=False)
    done = threading.Event()
    thinker.on_done = lambda job, rules: done.set()
    job = Turn(1, state if state.to_move is Side.SOUTH else mirrored(state), lambda _: None, 0.0)
    job.received = time.monotonic()
    thinker.submit(job)
    stop = threading.Timer(SERVER_TIMEOUT_S, thinker.stop, (1,))
    stop.start()
    done.wait()
    stop.join()
    thinker.close()
    assert job.sent is not None
    return job.sent, reached[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=Path, default=GAMES)
    parser.add_argument("--ponder", type=float, default=4.0, help="seconds of pondering")
    parser.add_argument("--ref-depth", type=int, default=12)
    parser.add_argument("--limit", type=int, default=None, help="at most this many states")
    args = parser.parse_args()
    loss = {False: 0, True: 0}
    depths: dict[bool, list[int]] = {False: [], True: []}
    count = differ = 0
    for game in json.loads(args.games.read_text()):
        rules = Rules.preset("kgp", houses=game["houses"], seeds=game["seeds"])
        side = Side.SOUTH if game["side"] == "south" else Side.NORTH
        for ponder_from, state in states(rules, game["moves"], side):
            if args.limit is not None and count >= args.limit:
                break
            count += 1
            chosen = {}
            for same in (False, True):
                chosen[same], reached = answer(rules, ponder_from, state, same, args.ponder)
                depths[same].append(reached)
            if chosen[False] == chosen[True]:
                continue
            differ += 1
            ref = Engine(tt_mb=1024, threads=1).analyse(
                state, rules, depth=args.ref_depth, pv_limit=1
            )
            values = {m.move: m.value for m in ref.moves}
            best = max(values.values())
            lost = {same: best - values[chosen[same]] for same in (False, True)}
            for same in (False, True):
                loss[same] += lost[same]
            print(
                f"{game['name']} state {count}: off {chosen[False]} (loses {lost[False]}), "
                f"on {chosen[True]} (loses {lost[True]}); depth {args.ref_depth}: "
                f"best {ref.best_moves} {best:+d}",
                flush=True,
            )
    print(f"\n{count} states, {differ} answered differently")
    for same in (False, True):
        name = "same_draft on " if same else "same_draft off"
        print(
            f"{name}: seeds lost against depth {args.ref_depth}: {loss[same]} "
            f"({loss[same] / max(1, count):.3f} a state); median depth reached "
            f"{statistics.median(depths[same]) if depths[same] else 0}"
        )


if __name__ == "__main__":
    main()
