"""The project against Irving's published solver on the project's own hard positions.

    python benchmarks/vs_irving.py --peer /work/peers/irving [--egdb-dir /work/egdb]
                                   [--repeat 3] [--tt-mb 256] [--sets hard held-out]
                                   [--db-seeds 24 --peer-db endgame.dat] [--baseline DIR]

Irving's solver (github.com/girving/kalah) plays Kalah(6,N) with empty capture only, so the
positions are the empty-capture ("always") ones of ``hard_set.json`` and ``held_out.json``:
2 + 3 per size of Kalah(6,4), (6,5) and (6,6), 15 in all (the hard set alone holds only 6
of them, two a size: too few for a ratio per size). Build the peer *beside* the project,
never inside it, with its own 24-seed database (one core; about 10-45 minutes)::

    git clone https://github.com/girving/kalah /work/peers/irving && cd /work/peers/irving
    make serial CFLAGS="-O3 -funroll-loops -fcommon -fgnu89-inline -w"   # modern gcc
    printf '4\\nc 24\\ns\\nq\\n' | ./generator endgame.dat                 # 4-bit, 24 seeds

and the project's (``/work/egdb/always-24.egdb``)::

    kalah egdb build --houses 6 --seeds 24 --capture always -o /work/egdb/always-24.egdb

``--db-seeds N`` gives both programs N-seed databases instead (the project's
``always-N.egdb``, the peer's ``--peer-db`` file built with ``c N``). ``--baseline DIR`` adds
another build of the project (a tree with its extensions built in place: ``git archive REV |
tar -x -C DIR && python setup.py build_ext --inplace`` there) to the rotation: the table before
and after a change, both against the peer, from one run.

Both databases are read into the page cache first (``warm``: the project's through its own
mapping, in 2 MiB pages). Each position is solved by each program in a process of its own, one
thread each, the same table memory (``--tt-mb``; the peer's entries are 16 bytes, so ``-t
log2(MiB * 2^16)``), the two alternately (the order flips from one position and one round to
the next, so drift in the machine's load falls on both alike). The project runs ``kalah solve
POS --prove value`` (the value and one optimal move, what the peer proves) with ``--json``; the
peer ``kalah-s -v -t T -e 24 p <14 pits, the mover's first>``. Wall time is the whole process
as seen from here (start-up, imports, mapping or loading the database); search time is the
project's ``time_ms`` and the peer's "Thinking time". Nodes are each program's own count: the
project counts every call of its search, the peer only the nodes its peek (table, database,
futility) did not settle in the parent; ``expanded`` is the project's nodes counted the peer's
way (those whose children it generated; the peer's nodes again on its side). Every value is
checked against the stored one. With ``--repeat R`` each pair runs R times and each position's
median of each measure is used; the table gives per size and in total the sums of those medians
and the peer/project ratios (above 1: the project is faster or searches fewer nodes)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    "hard": Path(__file__).with_name("hard_set.json"),
    "held-out": Path(__file__).with_name("held_out.json"),
}
PEER_ENTRY_BYTES = 16  # the peer's table entry: an 8-byte key and 4 bytes, padded to 16
MEASURES = ("wall", "search", "nodes", "expanded")


def kalah_command() -> list[str]:
    """The project's ``kalah`` script beside this interpreter (the venv's), else the module."""
    script = Path(sys.executable).with_name("kalah")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kalah_core"]


def pits(position: str) -> list[int]:
    """The peer's 14 pits: the mover's houses (house 1 first), store, the other's, store."""
    sys.path.insert(0, str(ROOT))
    from kalah_core.position import Position, Side

    p = Position.parse(position)
    south = [*p.south, p.stores[0]]
    north = [*p.north, p.stores[1]]
    return south + north if p.to_move is Side.SOUTH else north + south


def seconds_of(text: str) -> float:
    """The peer's elapsed-time format: seconds below a minute, else [D days, ][H:]MM:SS."""
    days = 0
    if "days," in text:
        head, text = text.split("days,")
        days = int(head)
    parts = [float(x) for x in text.strip().split(":")]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return days * 86400 + seconds


def run_project(
    entry: dict[str, Any], egdb: str, tt_mb: int, tree: Path | None = None
) -> dict[str, float]:
    rules = entry["rules"]
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    command = [
        *(kalah_command() if tree is None else [sys.executable, "-m", "kalah_core"]),
        "solve",
        entry["position"],
        "--houses",
        str(rules["houses"]),
        "--seeds",
        str(rules["seeds"]),
        "--capture",
        rules["capture"],
        "--prove",
        "value",
        "--threads",
        "1",
        "--tt-mb",
        str(tt_mb),
        "--egdb",
        egdb,
        "--no-progress",
        "--json",
    ]
    started = time.perf_counter()
    out = subprocess.run(
        command, check=True, capture_output=True, text=True, cwd=tree, env=env
    ).stdout
    wall = time.perf_counter() - started
    data = json.loads(out)
    return {
        "value": data["value"],
        "wall": wall,
        "search": data["time_ms"] / 1000,
        "nodes": data["nodes"],
        # a build before the count was printed: every node stands in for it
        "expanded": data.get("expanded", data["nodes"]),
    }


def run_peer(
    entry: dict[str, Any], peer: Path, tt_mb: int, db_seeds: int, db: str
) -> dict[str, float]:
    bits = int(math.log2(tt_mb * 2**20 // PEER_ENTRY_BYTES))
    command = ["./kalah-s", "-v", "-t", str(bits), "-e", str(db_seeds), "-E", db, "p"]
    command += [str(n) for n in pits(entry["position"])]
    started = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=peer).stdout
    wall = time.perf_counter() - started
    value = re.search(r"^Move: s 0, m \S+, r (-?\d+)", out, re.M)
    thinking = re.search(r"^Thinking time:\s+(.+)$", out, re.M)
    nodes = re.search(r"^Nodes searched:\s+(\d+)", out, re.M)
    if not (value and thinking and nodes):
        raise SystemExit(f"unexpected output of the peer:\n{out}")
    return {
        "value": int(value.group(1)),
        "wall": wall,
        "search": seconds_of(thinking.group(1)),
        "nodes": int(nodes.group(1)),
        "expanded": int(nodes.group(1)),  # the peer counts only these
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {m: statistics.median(r[m] for r in runs) for m in MEASURES}


def table(rows: list[dict[str, Any]], other: str) -> None:
    """Per size and in total: the sums of ``other``'s and the project's medians, and ratios."""
    print()
    header = f"{'':10}"
    for m in MEASURES:
        header += f" {m + ' ' + other:>15} {m + ' project':>16} {'ratio':>6}"
    print(header)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(f"Kalah(6,{row['entry']['rules']['seeds']})", []).append(row)
    groups["total"] = rows
    for name, chosen in groups.items():
        line = f"{name:10}"
        for m in MEASURES:
            theirs = sum(r[other][m] for r in chosen)
            ours = sum(r["project"][m] for r in chosen)
            if m in ("nodes", "expanded"):
                line += f" {theirs / 1e6:13.1f} M {ours / 1e6:14.1f} M {theirs / ours:6.2f}"
            else:
                line += f" {theirs:13.2f} s {ours:14.2f} s {theirs / ours:6.2f}"
        print(line)


WARM = """
import os, sys
from kalah_core import Rules
from kalah_core.egdb import EndgameDatabase
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
EndgameDatabase.open(path, Rules(houses=6, capture="always")).verify()
"""


def warm(egdb: str, peer_db: Path) -> None:
    """Both databases in the page cache before the first round, so that no program's first
    process reads its file from disk. The project's file is dropped from the cache first (pages
    another process maps stay) and read back through its own mapping, whose MADV_HUGEPAGE
    makes the kernel cache it in 2 MiB folios: in 4 KiB ones, whatever an earlier job left
    there, every probe of the database costs TLB misses (a third more search time seen)."""
    subprocess.run([sys.executable, "-c", WARM, egdb], check=True)
    with open(peer_db, "rb") as f:
        while f.read(1 << 24):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", default="/work/peers/irving", help="the peer's built tree")
    parser.add_argument("--egdb-dir", default="/work/egdb", help="holds always-24.egdb")
    parser.add_argument("--tt-mb", type=int, default=256, help="table memory of each program")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each pair")
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS), default=list(SETS))
    parser.add_argument("--limit", type=int, default=0, help="only the first N positions")
    parser.add_argument("--db-seeds", type=int, default=24, help="both databases' seeds")
    parser.add_argument("--peer-db", default="endgame.dat", help="the peer's database file")
    parser.add_argument("--baseline", default=None, help="another built tree of the project")
    args = parser.parse_args()
    peer = Path(args.peer)
    egdb = f"{args.egdb_dir}/always-{args.db_seeds}.egdb"
    names = ["peer", "project"] + (["baseline"] if args.baseline else [])
    entries = [
        entry
        for name in args.sets
        for entry in json.loads(SETS[name].read_text(encoding="utf-8"))
        if entry["rules"]["capture"] == "always"
    ]
    entries.sort(key=lambda e: e["rules"]["seeds"])
    if args.limit:
        entries = entries[: args.limit]
    warm(egdb, peer / args.peer_db)
    print(f"{len(entries)} positions, {args.repeat} round(s), load {os.getloadavg()}")
    print(f"{'position':34} " + "   ".join(f"{n}: wall/search s, M nodes" for n in names))
    rows: list[dict[str, Any]] = []
    turn = 0
    for entry in entries:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for _ in range(args.repeat):
            # Rotate (and reverse every other time) so that no program always goes first.
            k = turn % len(names)
            order = names[k:] + names[:k]
            if (turn // len(names)) % 2:
                order.reverse()
            turn += 1
            for name in order:
                if name == "peer":
                    got = run_peer(entry, peer, args.tt_mb, args.db_seeds, args.peer_db)
                elif name == "baseline":
                    got = run_project(entry, egdb, args.tt_mb, Path(args.baseline))
                else:
                    got = run_project(entry, egdb, args.tt_mb)
                if got["value"] != entry["value"]:
                    raise SystemExit(f"{name} gives {got['value']} for {entry}")
                runs[name].append(got)
            shown = "   ".join(
                f"{r['wall']:7.2f}/{r['search']:7.2f} {r['nodes'] / 1e6:7.2f}"
                for r in (runs[name][-1] for name in names)
            )
            print(
                f"{entry['rules']['seeds']} {entry['position']:26} {entry['value']:+3d}  {shown}",
                flush=True,
            )
        rows.append({"entry": entry, **{name: median_of(runs[name]) for name in names}})
    print(f"every value agreed; load after {os.getloadavg()}")
    table(rows, "peer")
    if args.baseline:
        table(rows, "baseline")


if __name__ == "__main__":
    main()
