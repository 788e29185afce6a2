"""Endgame database formats: one byte a board (version 2), packed (version 3, 4 bits) and radix
(version 4, 17 boards a 64-bit word).

For each N given, builds the ``kalah`` database (6 houses) in the three formats, in a child
process each (so that the child's peak resident memory is the build's), in an order that turns
with N, or (``--files FMT=PATH ...``, one N) takes databases built before (their build records
give the build time; no peak memory), and then, interleaved round by round on the files:

- compiled probes per second (``probe_benchmark``: pseudo-random boards, the search's path),
- the search's nodes per second on a few positions 8 seeds above N (one thread, a fresh
  16 MiB table each; the node counts must be equal: the formats hold the same values).

Prints bits a board, file size, escapes, build time and peak memory, probe rates and search
rates with the ratios to byte (medians), the load average, and the largest N whose file
(and whose build) fits 8 and 16 GB in each format, from the exact board counts (the dense
files' escapes at the shares measured at the largest N). Files go to ``--dir`` (default /tmp)
and are deleted unless ``--keep`` (never those of ``--files``). Run from the repository root::

    nice -n 5 python benchmarks/bench_egdb_formats.py --seeds 16 20 24 [--rounds 5] [--json]
    nice -n 5 python benchmarks/bench_egdb_formats.py --seeds 24 \
        --files byte=/work/egdb/b24.egdb packed=/work/egdb/p24.egdb radix=/work/egdb/r24.egdb
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kalah_core import Position, Rules
from kalah_core._egdb import level_size, packed_layout, radix_layout
from kalah_core.egdb import HEADER_SIZE, EndgameDatabase, entry_count, read_build_seconds
from kalah_core.solver import Engine

CHILD = """
import json, resource, sys
from kalah_core import Rules
from kalah_core.egdb import build
path, seeds, fmt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = build(path, Rules.preset("kalah"), seeds, progress=False, format=fmt)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"solve_s": s.solve_seconds, "write_s": s.write_seconds,
                  "pack_s": s.pack_seconds, "bytes": s.file_bytes, "escapes": s.escapes,
                  "far": s.far, "peak_rss": peak, "bits": s.bits}))
"""
FORMATS = ("byte", "packed", "radix")


def build_child(path: Path, seeds: int, fmt: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(seeds), fmt],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["load"] = round(os.getloadavg()[0], 2)
    return result


def positions(seeds: int, count: int) -> list[Position]:
    """Positions of 6 houses with ``seeds`` + 8 seeds in houses (pseudo-random, fixed)."""
    rng = random.Random(seeds)
    found = []
    while len(found) < count:
        cells = [0] * 12
        for _ in range(seeds + 8):
            cells[rng.randrange(12)] += 1
        if sum(cells[:6]) and sum(cells[6:]):
            found.append(Position(tuple(cells[:6]), tuple(cells[6:]), (10, 8)))
    return found


def search_rate(db: EndgameDatabase, boards: list[Position]) -> tuple[float, int, list[int]]:
    """(nodes per second, nodes, values) of exact searches of ``boards``, fresh table each."""
    rules = Rules.preset("kalah")
    nodes = 0
    seconds = 0.0
    values = []
    for position in boards:
        engine = Engine(tt_mb=16, databases=[db])
        began = time.perf_counter()
        result = engine.analyse(position, rules)
        seconds += time.perf_counter() - began
        nodes += result.nodes
        values.append(result.value)
    return nodes / seconds, nodes, values


def prebuilt(path: Path) -> dict[str, Any]:
    """What a database built before says of its build (no peak memory)."""
    db = EndgameDatabase.open_any(path)
    record = json.loads(path.with_name(path.name + ".build.json").read_text())
    return {
        "solve_s": record.get("solve_seconds", read_build_seconds(path)),
        "write_s": record.get("write_seconds", 0.0),
        "pack_s": 0.0,
        "bytes": db.file_bytes,
        "escapes": db.header.escapes,
        "far": db.header.far,
        "peak_rss": 0,
        "bits": db.header.bits,
        "threads": record.get("threads"),
        "load": None,
    }


def run(seeds: int, args: argparse.Namespace) -> dict[str, Any]:
    given = dict(item.split("=", 1) for item in args.files)
    paths = {fmt: args.dir / f"bench-egdb-{fmt}-n{seeds}.egdb" for fmt in FORMATS}
    paths.update({fmt: Path(path) for fmt, path in given.items()})
    turn = seeds % len(FORMATS)
    order = list(FORMATS[turn:] + FORMATS[:turn])
    built = {
        fmt: prebuilt(paths[fmt]) if fmt in given else build_child(paths[fmt], seeds, fmt)
        for fmt in order
    }
    try:
        dbs = {fmt: EndgameDatabase.open_any(paths[fmt]) for fmt in order}
        for db in dbs.values():
            db.table.compute_checksum()  # read through: page cache warm for both
        probes: dict[str, list[float]] = {fmt: [] for fmt in order}
        searches: dict[str, list[float]] = {fmt: [] for fmt in order}
        nodes: dict[str, int] = {}
        boards = positions(seeds, args.positions)
        for r in range(args.rounds):
            for fmt in order if r % 2 == 0 else order[::-1]:
                seconds, _ = dbs[fmt].table.probe_benchmark(args.probes, r + 1)
                probes[fmt].append(args.probes / seconds)
                rate, count, values = search_rate(dbs[fmt], boards)
                searches[fmt].append(rate)
                nodes[fmt] = count
                built[fmt].setdefault("values", values)
                assert built[fmt]["values"] == values
        assert nodes["byte"] == nodes["packed"] == nodes["radix"], nodes
        assert built["byte"]["values"] == built["packed"]["values"] == built["radix"]["values"]
        del dbs
    finally:
        if not args.keep:
            for fmt, path in paths.items():
                if fmt in given:
                    continue
                path.unlink(missing_ok=True)
                path.with_name(path.name + ".build.json").unlink(missing_ok=True)
    entries = entry_count(6, seeds)
    row: dict[str, Any] = {"max_seeds": seeds, "entries": entries, "search_nodes": nodes["byte"]}
    for fmt in order:
        b = built[fmt]
        row[fmt] = {
            "bits_a_board": round(8 * b["bytes"] / entries, 3),
            "bytes": b["bytes"],
            "escapes": b["escapes"],
            "far": b["far"],
            "escape_share": b["escapes"] / entries,
            "solve_s": round(b["solve_s"], 2),
            "pack_s": round(b["pack_s"], 2),
            "write_s": round(b["write_s"], 2),
            "peak_rss": b["peak_rss"],
            "load_after_build": b["load"],
            "probes_per_s": round(statistics.median(probes[fmt])),
            "search_nodes_per_s": round(statistics.median(searches[fmt])),
            "probe_rounds": [round(x) for x in probes[fmt]],
            "search_rounds": [round(x) for x in searches[fmt]],
        }
    for fmt in ("packed", "radix"):
        # the ratio of each round's rates (same round, same load), then their median
        row[f"{fmt}_probe_ratio"] = round(
            statistics.median(a / b for a, b in zip(probes[fmt], probes["byte"], strict=True)), 3
        )
        row[f"{fmt}_search_ratio"] = round(
            statistics.median(a / b for a, b in zip(searches[fmt], searches["byte"], strict=True)),
            3,
        )
    return row


def packed_file(seeds: int, share: float) -> int:
    return HEADER_SIZE + packed_layout(6, seeds)["total"] + int(share * entry_count(6, seeds))


def radix_file(seeds: int, share: float) -> int:
    escapes = int(share * entry_count(6, seeds))
    return HEADER_SIZE + radix_layout(6, seeds, escapes, escapes * 36 // 1000)["total"]  # 3.6 % far


def fits(budget: float, share: float, radix_share: float) -> dict[str, int]:
    """The largest N whose byte file, dense files and dense builds fit ``budget`` bytes."""

    def largest(size: Any) -> int:
        n = 0
        while size(n + 1) <= budget:
            n += 1
        return n

    return {
        "byte": largest(lambda n: HEADER_SIZE + entry_count(6, n)),
        "packed": largest(lambda n: packed_file(n, share)),
        # the packed levels below N and level N's bytes (packing gives them back chunk by chunk)
        "packed_build": largest(lambda n: packed_file(n - 1, share) + level_size(6, n)),
        "radix": largest(lambda n: radix_file(n, radix_share)),
        "radix_build": largest(lambda n: radix_file(n - 1, radix_share) + level_size(6, n)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[16, 20], metavar="N")
    parser.add_argument("--dir", type=Path, default=Path("/tmp"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--probes", type=int, default=2_000_000)
    parser.add_argument("--positions", type=int, default=4)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--files", nargs="*", default=[], metavar="FMT=PATH")
    args = parser.parse_args()
    load = os.getloadavg()
    rows = [run(n, args) for n in args.seeds]
    share = rows[-1]["packed"]["escape_share"]
    radix_share = rows[-1]["radix"]["escape_share"]
    budgets = {f"{gb} GB": fits(gb * 1e9, share, radix_share) for gb in (8, 16)}
    if args.json:
        print(json.dumps({"load": load, "rows": rows, "fits": budgets}, indent=2))
        return 0
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{'N':>3} {'format':>6} {'bits':>5} {'bytes':>15} {'escapes':>10} {'solve s':>8} "
        f"{'pack s':>6} {'peak MB':>8} {'Mprobes/s':>9} {'Mnodes/s':>8}"
    )
    for r in rows:
        for fmt in FORMATS:
            f = r[fmt]
            print(
                f"{r['max_seeds']:>3} {fmt:>6} {f['bits_a_board']:>5.2f} {f['bytes']:>15,} "
                f"{f['escapes']:>10,} {f['solve_s']:>8.2f} {f['pack_s']:>6.2f} "
                f"{f['peak_rss'] / 1e6:>8.0f} {f['probes_per_s'] / 1e6:>9.2f} "
                f"{f['search_nodes_per_s'] / 1e6:>8.3f}"
            )
        for fmt in ("packed", "radix"):
            print(
                f"    {fmt}/byte: probes {r[fmt + '_probe_ratio']:.3f}x, search "
                f"{r[fmt + '_search_ratio']:.3f}x (nodes {r['search_nodes']:,} in all), build "
                f"{r[fmt]['solve_s'] / r['byte']['solve_s']:.3f}x, file "
                f"{r[fmt]['bytes'] / r['byte']['bytes']:.4f}x"
            )
    print(
        f"largest N (escapes at {100 * share:.3f} % of the boards packed, "
        f"{100 * radix_share:.3f} % radix):"
    )
    for name, fit in budgets.items():
        print(
            f"  {name}: byte file {fit['byte']}, packed file {fit['packed']}, "
            f"packed build {fit['packed_build']}, radix file {fit['radix']}, radix build "
            f"{fit['radix_build']} (byte build = byte file)"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
