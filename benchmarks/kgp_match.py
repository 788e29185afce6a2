"""``kalah kgp`` against go-kgp's MinMax bots: wins, draws, losses and mean margin per board and
bot, read from the go-kgp server's own SQLite database.

For each board (houses x seeds) and MinMax depth this starts go-kgp's ``train`` server (one
fixed bot, MinMax at that depth with accuracy 1, 2 s a move) and one ``kalah kgp`` agent
(``--threads 1``), and lets them play until the agent has played ``--games`` games on each side
(the server draws the sides at random); every game that finished before the agent was stopped
counts (a game going on then, or started after it, is given up, and left out). The table
comes from the server's database: the result is its ``game.state``; the margin is the final
store difference for the agent, from replaying the server's ``move`` table under the ``kalah``
rules plus ``majority``.

**Building the server** (beside the project, never in it; go-kgp is AGPL), from Debian's Go
packages in GOPATH mode::

    apt-get update
    apt-get install golang golang-github-burntsushi-toml-dev golang-github-mattn-go-sqlite3-dev \\
        golang-nhooyr-websocket-dev golang-github-docker-docker-dev sqlite3
    # a copy of KWARC/kalah-game (checked at c30df8e) in /work/peers/kalah-game, e.g.
    git clone https://github.com/KWARC/kalah-game /work/peers/kalah-game
    mkdir -p /work/peers/gopath/src
    cp -r /work/peers/kalah-game/server/go-kgp /work/peers/gopath/src/go-kgp
    cd /work/peers/gopath/src/go-kgp
    export GOPATH=/work/peers/gopath:/usr/share/gocode GO111MODULE=off
    go build -o /work/peers/kgp-practice ./cmd/practice     # the practice server, unpatched
    # cmd/train (at c30df8e) imports fmt, os and strconv without using them:
    sed -i '/^\\t"fmt"$/d; /^\\t"os"$/d; /^\\t"strconv"$/d' cmd/train/main.go
    # train's scheduler also offers the Random bot half the time; for a table of MinMax games:
    sed -i 's|^\\tbots = append(bots, bot.MakeRandom())$|\\t// MinMax only|' sched/fifo.go
    go build -o /work/peers/kgp-train ./cmd/train
    # optional, for throughput: the scheduler pairs waiting agents every 20 s, so each game
    # waits 20-40 s for its start; a copy with a 2 s interval plays the same games sooner
    # (run it with KGP_TRAIN=/work/peers/kgp-train-fast)
    sed -i 's|^var interval = 20 \\* time.Second$|var interval = 2 * time.Second|' sched/fifo.go
    go build -o /work/peers/kgp-train-fast ./cmd/train

The agent uses the largest endgame database of the plain ``kalah`` rules on 6 houses that it
finds (see docs/kgp.md); the runs in docs/kgp.md had the 20-seed one, built outside the cache
folder with ``KALAH_EGDB_PATH=/work/peers/egdb kalah egdb build --seeds 20`` and the same
``KALAH_EGDB_PATH`` for the match. Then (from the project's folder, with its virtual
environment)::

    nice -n 10 .venv/bin/python benchmarks/kgp_match.py --boards 6x6,8x8 --depths 4,6,8 \\
        --games 2 --parallel 2

``--boards`` and ``--depths`` default to the whole match: 6x6, 8x8, 10x10 and 12x12 against
depths 4, 6 and 8, and 10 and 12 on 6x6 only. ``--games`` games are played on each side.
go-kgp's scheduler runs every 20 s, so each game also waits 20-40 s for its start. Use one
agent per server: go-kgp's FIFO scheduler removes the wrong agent from its queue when another
disconnects.

To stop a run early, send this script SIGINT (Ctrl-C) or SIGTERM, not its agents: the games
going on are given up and left out, the finished ones are tabled (an agent killed on its own
resigns its game, which the server records as a loss).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kalah_core import Game, Rules, Side

TRAIN = os.environ.get("KGP_TRAIN", "/work/peers/kgp-train")
AGENT_NAME = "kalah-core"
STOP = threading.Event()
"""Set by SIGINT or SIGTERM: every pair ends as if its games were done."""
FULL = [(6, 6, d) for d in (4, 6, 8, 10, 12)] + [(n, n, d) for n in (8, 10, 12) for d in (4, 6, 8)]


@dataclass
class GameRow:
    id: int
    side: Side
    result: str  # win, draw, loss
    margin: int | None
    moves: int
    seconds: float | None
    notation: str
    """The game in the notation of the Finnish article (South moved first)."""


@dataclass
class Pair:
    houses: int
    seeds: int
    depth: int
    games: list[GameRow] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    error: str | None = None
    stopped: set[int] = field(default_factory=set)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_games(db: Path, houses: int, seeds: int) -> tuple[list[GameRow], int]:
    """The finished games in ``db`` (id order) and the number still going."""
    rules = Rules.preset("kalah", majority=True, houses=houses, seeds=seeds)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute(
            "SELECT g.id, g.state, n.name, s.name FROM game g JOIN agent n ON n.id = g.north "
            "JOIN agent s ON s.id = g.south ORDER BY g.id"
        ).fetchall()
        out: list[GameRow] = []
        ongoing = 0
        for gid, state, _north, south in rows:
            if state == "o":
                ongoing += 1
                continue
            side = Side.SOUTH if south == AGENT_NAME else Side.NORTH
            moves = con.execute(
                "SELECT side, choice, played FROM move WHERE game = ? ORDER BY rowid", (gid,)
            ).fetchall()
            game = Game(rules)
            for mover_north, choice, _ in moves:
                if game.position.to_move is not (Side.NORTH if mover_north else Side.SOUTH):
                    raise RuntimeError(f"game {gid}: the moves do not replay")
                game.push(int(choice) + 1)
            south_store, north_store = game.position.stores
            over = state in ("nw", "sw", "u")
            margin = (south_store - north_store) * (1 if side is Side.SOUTH else -1)
            won = {"sw": Side.SOUTH, "nw": Side.NORTH, "nr": Side.SOUTH, "sr": Side.NORTH}
            result = "draw" if state == "u" else "win" if won.get(state) is side else "loss"
            seconds = None
            if len(moves) >= 2:
                first, last = moves[0][2], moves[-1][2]
                with contextlib.suppress(ValueError, TypeError):
                    seconds = _seconds(last) - _seconds(first)
            out.append(
                GameRow(gid, side, result, margin if over else None, len(moves), seconds, game.fi())
            )
        return out, ongoing
    finally:
        con.close()


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(str(stamp)[:26].replace(" ", "T")).timestamp()


def _ongoing_ids(db: Path) -> set[int]:
    """The games going on, and every id above the last one so far: go-kgp may still start a
    game with an agent that has gone (its liveness ping came just before), which it then
    records as given up at once."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        ongoing = {row[0] for row in con.execute("SELECT id FROM game WHERE state = 'o'")}
        last = con.execute("SELECT coalesce(max(id), 0) FROM game").fetchone()[0]
        return ongoing | set(range(last + 1, last + 1000))
    finally:
        con.close()


def run_pair(
    pair: Pair,
    games_per_side: int,
    time_per_move: float,
    tt_mb: int,
    keep: Path | None,
    agent_args: list[str] | None = None,
) -> Pair:
    started = time.monotonic()
    if STOP.is_set():
        pair.error = "not played (stopped)"
        return pair
    with tempfile.TemporaryDirectory(prefix="kgp-match-") as tmp:
        db = Path(tmp) / "data.db"
        tcp, www = free_port(), free_port()
        server = subprocess.Popen(
            [
                TRAIN,
                f"-search-depth={pair.depth}",
                "-search-accuracy=1",
                f"-board-size={pair.houses}",
                f"-board-init={pair.seeds}",
                "-timeout=2s",
                f"-db={db}",
                f"-tcpport={tcp}",
                f"-wwwport={www}",
            ],
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=open(Path(tmp) / "server.log", "w"),  # noqa: SIM115
        )
        agent_log = open(Path(tmp) / "agent.log", "w")  # noqa: SIM115
        agent = None
        try:
            time.sleep(1.0)
            agent = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kalah_core",
                    "kgp",
                    f"tcp://127.0.0.1:{tcp}",
                    "--time-per-move",
                    str(time_per_move),
                    "--threads",
                    "1",
                    "--tt-mb",
                    str(tt_mb),
                    *(agent_args or []),
                ],
                stdout=agent_log,
                stderr=agent_log,
            )
            while not STOP.wait(2.0):
                if agent.poll() is not None:
                    pair.error = f"the agent exited with {agent.returncode}"
                    break
                if not db.exists():
                    continue
                try:
                    done, _ = read_games(db, pair.houses, pair.seeds)
                except sqlite3.Error:
                    continue
                sides = [g.side for g in done]
                if min(sides.count(Side.SOUTH), sides.count(Side.NORTH)) >= games_per_side:
                    break
            else:
                pair.error = "stopped early"
        finally:
            # Games going on now are given up when the agent stops: not part of the match.
            with contextlib.suppress(sqlite3.Error, OSError, RuntimeError):
                pair.stopped = _ongoing_ids(db)
            if agent is not None and agent.poll() is None:
                agent.send_signal(signal.SIGTERM)
                try:
                    agent.wait(60)
                except subprocess.TimeoutExpired:
                    agent.kill()
            server.send_signal(signal.SIGINT)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
            agent_log.close()
        done, _ = read_games(db, pair.houses, pair.seeds)
        # Every game that finished before the agent was stopped counts.
        pair.games = [g for g in done if g.id not in pair.stopped]
        pair.extra = [
            f"game {g.id}: given up when the agent stopped" for g in done if g.id in pair.stopped
        ]
        log_text = (Path(tmp) / "agent.log").read_text()
        pair.extra += [line for line in log_text.splitlines() if "Traceback" in line]
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            stem = f"{pair.houses}x{pair.seeds}-mm{pair.depth}"
            for name in ("data.db", "agent.log", "server.log"):
                with contextlib.suppress(OSError):
                    shutil.copy(Path(tmp) / name, keep / f"{stem}-{name}")
    pair.wall_s = time.monotonic() - started
    return pair


def table(pairs: list[Pair]) -> str:
    lines = [
        "| board | bot | games | won | drawn | lost | mean margin | as South W/D/L | "
        "mean as South | as North W/D/L | mean as North | s/game | distinct South, North |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def mean(rows: list[GameRow]) -> str:
        margins = [x.margin for x in rows if x.margin is not None]
        return f"{sum(margins) / len(margins):+.1f}" if margins else "n/a"

    def wdl(rows: list[GameRow]) -> str:
        return "/".join(str(sum(r.result == k for r in rows)) for k in ("win", "draw", "loss"))

    for p in pairs:
        g = p.games
        south = [x for x in g if x.side is Side.SOUTH]
        north = [x for x in g if x.side is Side.NORTH]
        secs = [x.seconds for x in g if x.seconds is not None]
        per_game = f"{sorted(secs)[len(secs) // 2]:.0f}" if secs else "n/a"
        lines.append(
            f"| {p.houses}x{p.seeds} | MinMax-{p.depth} | {len(g)} "
            f"| {sum(x.result == 'win' for x in g)} | {sum(x.result == 'draw' for x in g)} "
            f"| {sum(x.result == 'loss' for x in g)} | {mean(g)} "
            f"| {wdl(south)} | {mean(south)} | {wdl(north)} | {mean(north)} | {per_game} "
            f"| {len({x.notation for x in south})}, {len({x.notation for x in north})} |"
            + (f" {p.error}" if p.error else "")
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", default=None, help="e.g. 6x6,8x8 (default: the full match)")
    parser.add_argument("--depths", default=None, help="e.g. 4,6,8 (default: the full match)")
    parser.add_argument("--games", type=int, default=10, help="games on each side per pair")
    parser.add_argument("--parallel", type=int, default=1, help="pairs played at once")
    parser.add_argument(
        "--time-per-move",
        type=float,
        default=1.95,
        help="the agent's --time-per-move (default 1.95: it keeps 0.1 s of it, 1.85 s of the "
        "server's 2 s)",
    )
    parser.add_argument(
        "--agent-args", default="", help="more options for kalah kgp, e.g. --no-memory"
    )
    parser.add_argument("--tt-mb", type=int, default=256)
    parser.add_argument("--keep", type=Path, default=None, help="copy each pair's database here")
    args = parser.parse_args()
    if not Path(TRAIN).exists():
        print(f"no go-kgp train server at {TRAIN} (set KGP_TRAIN); see the docstring")
        return 2
    wanted = FULL
    if args.boards:
        boards = {tuple(int(x) for x in b.split("x")) for b in args.boards.split(",")}
        wanted = [w for w in wanted if (w[0], w[1]) in boards]
    if args.depths:
        depths = {int(d) for d in args.depths.split(",")}
        wanted = [w for w in wanted if w[2] in depths]
    pairs = [Pair(h, s, d) for h, s, d in wanted]
    extra = args.agent_args.split()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: STOP.set())
    started = time.monotonic()
    with ThreadPoolExecutor(args.parallel) as pool:
        done = list(
            pool.map(
                lambda p: run_pair(p, args.games, args.time_per_move, args.tt_mb, args.keep, extra),
                pairs,
            )
        )
    print(table(done))
    total = sum(len(p.games) for p in done)
    losses = sum(g.result == "loss" for p in done for g in p.games)
    draws = sum(g.result == "draw" for p in done for g in p.games)
    print(
        f"\n{total} games, {losses} lost, {draws} drawn; {time.monotonic() - started:.0f} s "
        f"wall ({args.parallel} at a time); per pair: "
        + ", ".join(f"{p.houses}x{p.seeds}/MM{p.depth} {p.wall_s:.0f} s" for p in done)
    )
    for p in done:
        for line in p.extra:
            print(f"{p.houses}x{p.seeds}/MM{p.depth}: {line}")
        # The games not won, move by move, to analyse afterwards.
        for g in p.games:
            if g.result != "win":
                side = "South" if g.side is Side.SOUTH else "North"
                margin = "" if g.margin is None else f" ({g.margin:+d})"
                print(
                    f"{p.houses}x{p.seeds}/MM{p.depth} game {g.id}, {g.result} as {side}"
                    f"{margin}: {g.notation}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
