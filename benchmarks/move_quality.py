"""Move quality where no proof reaches: how good the unproven best move and estimate are.

    python benchmarks/move_quality.py generate --egdb-dir .egdb    # writes data/move_quality.json
    python benchmarks/move_quality.py run --baseline HEAD~1 --egdb-dir .egdb [--budgets 1000 100]
    python benchmarks/move_quality.py depth --baseline HEAD~1 --budgets 1000 [--repeat 5]

``generate`` plays self-play games with some noise (a depth-4 search picks among the moves
within NOISE_MARGIN of its best, and a random move one time in NOISE_RANDOM) for every preset
and for KGP 6x6 (the ``kalah`` rules with 6 seeds and ``majority``), and keeps positions in
three phases: the first 10 sowings, sowings 10-29, and 30 on. Each kept position is solved with
``prove="all"`` by a long search (LABEL_MS, a large table, the endgame databases of
``--egdb-dir``, and the shipped book, whose values were proven the same way); where every
move's value is proven it is stored as that position's known values. Where nothing proves them
(the 6-seed openings) a position is kept without values: it still measures the proven bounds'
width and the depth reached. The piet-hein start and the position after its house 1 (which
moves again) carry the published values of Kalah(6,6) with empty capture instead, with their
source (PUBLISHED_SOURCE): a check on the engine, never an input.

``run`` builds the baseline commit in a temporary directory (as ``hard_set.py`` does), starts
one worker process per build (each with the shipped book, the databases of ``--egdb-dir`` and
the service's 64 MB table, emptied before each position), and analyses every position at each
budget with both builds, alternately (the order flips from one position to the next). It
prints, by preset and phase, for each budget and build:

- ``opt``: the share of positions with known values whose best move is optimal;
- ``loss``: the mean seeds lost by the best move (best value minus the chosen move's value);
- ``err``: the mean distance of the shown value from the true value;
- ``width``: the median width of the proven bounds (upper - lower) over every position;
- ``depth``: the median depth reached by unproven answers; ``exact``: the share proven.

``--show-published`` prints each move of the positions with published values beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hard_set import ROOT, build_baseline

DATA = Path(__file__).with_name("data") / "move_quality.json"
PHASES = ("0-9", "10-29", "30+")
PER_CELL = 6  # positions per (rule set, phase)
CANDIDATES = 10  # positions tried per cell, at most, to find PER_CELL with known values
LABEL_MS = 20_000.0  # budget of the long search that labels a position
LABEL_TT_MB = 512
NOISE_MARGIN = 2
NOISE_RANDOM = 8
SERVICE_TT_MB = 64
PUBLISHED_SOURCE = (
    "Rawlings 2015, Kalah(6,6) with empty capture, value of each first move: Wikipedia "
    "'Kalah', section 'Computer analysis of Kalah(6,6) with the empty capture rule', revision "
    "690667612 of 14 November 2015 (https://en.wikipedia.org/?oldid=690667612&title=Kalah); "
    "/work/shared/KNOWN_VALUES.md"
)
# Rawlings's first turns: 1-2 .. 1-6 (house 1 ends in the store, then that house), 2 .. 6.
PUBLISHED_AFTER_1 = {2: 2, 3: 2, 4: 0, 5: 0, 6: 0}
PUBLISHED_START = {1: max(PUBLISHED_AFTER_1.values()), 2: 2, 3: 0, 4: 0, 5: 0, 6: -2}


def rule_sets() -> dict[str, Any]:
    from kalah_core import PRESETS, Rules

    sets: dict[str, Any] = dict(PRESETS)
    sets["kgp-6x6"] = Rules.preset("kalah", seeds=6, majority=True)  # the `kgp` preset is 8x8
    return sets


# A worker: reads {"rules", "position", "time_ms", "label"} lines, answers the analysis.
WORKER = r"""
import json, sys
from kalah_core import Rules
from kalah_core.book import shipped
from kalah_core.databases import open_best
from kalah_core.position import parse_position
from kalah_core.solver import Engine
import inspect
books = {"book": shipped()}
if "deep_book" in inspect.signature(Engine).parameters:  # the builds that have a deep book
    from kalah_core.deepbook import shipped as deep_shipped
    books["deep_book"] = deep_shipped()

databases = open_best(sys.argv[1])  # the largest database of each rule key
engines = {}
for line in sys.stdin:
    job = json.loads(line)
    rules = Rules.from_json(job["rules"])
    label = job.get("label", False)
    engine = engines.get(label)
    if engine is None:
        engine = Engine(int(sys.argv[3 if label else 2]), **books)
        for db in databases:
            engine.attach(db)
        engines[label] = engine
    position = parse_position(job["position"], rules)
    engine.clear()
    a = engine.analyse(position, rules, time_ms=job["time_ms"], pv_limit=1)
    print(json.dumps({
        "value": a.value, "exact": a.exact, "lower": a.lower, "upper": a.upper,
        "best": a.best_moves[0] if a.best_moves else None, "depth": a.depth,
        "nodes": a.nodes, "time_ms": a.time_ms,
        "moves": {str(m.move): [m.value, m.lower, m.upper] for m in a.moves},
    }), flush=True)
"""


class Worker:
    """A process analysing positions with the kalah_core of ``tree``."""

    def __init__(self, tree: Path, egdb_dir: str, tt_mb: int = SERVICE_TT_MB) -> None:
        import subprocess

        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, egdb_dir, str(tt_mb), str(LABEL_TT_MB)],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def analyse(self, entry: dict[str, Any], time_ms: float, label: bool = False) -> Any:
        job = {"rules": entry["rules"], "position": entry["position"], "time_ms": time_ms}
        job["label"] = label
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def phase_of(sowings: int) -> str:
    return PHASES[0] if sowings < 10 else PHASES[1] if sowings < 30 else PHASES[2]


def noisy_game(rules: Any, rng: random.Random, engine: Any) -> list[tuple[int, Any]]:
    """(sowings played, position) of every position of one noisy self-play game not over."""
    from kalah_core import Position, is_over, legal_moves, play

    position = Position.start(rules)
    seen = []
    sowings = 0
    while not is_over(position, rules):
        seen.append((sowings, position))
        moves = legal_moves(position, rules)
        if rng.randrange(NOISE_RANDOM) == 0:
            move = rng.choice(moves)
        else:
            a = engine.analyse(position, rules, depth=4, pv_limit=1)
            good = [m.move for m in a.moves if m.value >= a.value - NOISE_MARGIN]
            move = rng.choice(good)
        position = play(position, rules, move).after
        sowings += 1
    return seen


def generate(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from kalah_core import Position, Rules
    from kalah_core.solver import Engine

    player = Engine(16)
    entries: list[dict[str, Any]] = []
    names = args.rules or list(rule_sets())
    for name in names:
        rules: Rules = rule_sets()[name]
        labeller = Worker(ROOT, args.egdb_dir)  # opens the databases there now
        rng = random.Random(f"move-quality-{name}")
        for phase in PHASES:
            kept: list[dict[str, Any]] = []
            unlabelled: list[dict[str, Any]] = []
            hopeless = rules.seeds >= 6 and phase == PHASES[0]
            if hopeless:  # the start itself is the position users ask most
                start = Position.start(rules)
                entry = {"set": name, "phase": phase, "rules": rules.to_json()}
                entry |= {"position": start.compact(), "sowings": 0}
                if name == "piet-hein":
                    kept.append(published(entry, PUBLISHED_START))
                    after = player.analyse(start, rules, depth=1).moves
                    first = next(m.position for m in after if m.move == 1)
                    kept.append(
                        published({**entry, "position": first.compact(), "sowings": 1},
                                  PUBLISHED_AFTER_1)
                    )  # fmt: skip
                else:
                    unlabelled.append(entry)
            tried = 0
            while len(kept) < PER_CELL and tried < CANDIDATES:
                game = [p for p in noisy_game(rules, rng, player) if phase_of(p[0]) == phase]
                if not game:
                    continue
                sowings, position = rng.choice(game)
                if position == Position.start(rules):
                    continue
                tried += 1
                entry = {"set": name, "phase": phase, "rules": rules.to_json()}
                entry |= {"position": position.compact(), "sowings": sowings}
                seeds = sum(position.south) + sum(position.north)
                if hopeless:
                    unlabelled.append(entry)
                    print(f"  {name:10} {phase:6} {entry['position']:32} {seeds:2} seeds: "
                          "not labelled (6-seed opening)", flush=True)  # fmt: skip
                    if len(unlabelled) >= PER_CELL:
                        break
                    continue
                a = labeller.analyse(entry, args.label_ms, label=True)
                exact = all(low == high for _, low, high in a["moves"].values())
                print(
                    f"  {name:10} {phase:6} {entry['position']:32} {seeds:2} seeds: "
                    f"{'exact' if exact else 'unproven'} {a['value']:+d} "
                    f"{a['time_ms'] / 1000:.1f} s {a['nodes']:,} nodes",
                    flush=True,
                )
                if exact:
                    values = {m: v for m, (v, _, _) in a["moves"].items()}
                    kept.append({**entry, "values": values, "source": "search"})
                else:
                    unlabelled.append(entry)
            entries.extend(kept + unlabelled[: max(0, PER_CELL - len(kept))])
        labeller.close()
    old = [e for e in load() if e["set"] not in names] if DATA.exists() else []
    write(old + entries)
    print(f"{len(old + entries)} positions in {DATA}")


def published(entry: dict[str, Any], values: dict[int, int]) -> dict[str, Any]:
    return {**entry, "values": {str(m): v for m, v in values.items()}, "source": PUBLISHED_SOURCE}


def load() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def write(entries: list[dict[str, Any]]) -> None:
    """One position a line: set, phase, rules, position, sowings, values (move: value), source."""
    DATA.parent.mkdir(exist_ok=True)
    lines = ",\n ".join(json.dumps(entry) for entry in entries)
    DATA.write_text(f"[{lines}]\n", encoding="utf-8")


def score(entry: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The measures of one answer (those needing known values only where there are some)."""
    row: dict[str, Any] = {
        "width": answer["upper"] - answer["lower"],
        "depth": answer["depth"],
        "exact": answer["exact"],
    }
    values = entry.get("values")
    if values and answer["best"] is not None:
        best = max(values.values())
        chosen = values[str(answer["best"])]
        row |= {"opt": chosen == best, "loss": best - chosen, "err": abs(answer["value"] - best)}
        for move, (_, low, high) in answer["moves"].items():
            if move in values and not low <= values[move] <= high:
                row["wrong_bounds"] = f"{entry['position']} move {move}: {values[move]} not in"
                row["wrong_bounds"] += f" [{low}, {high}]"
    return row


def summary(rows: list[dict[str, Any]]) -> str:
    labelled = [r for r in rows if "opt" in r]
    depths = [r["depth"] for r in rows if r["depth"] is not None]
    parts = []
    if labelled:
        opt = sum(r["opt"] for r in labelled) / len(labelled)
        loss = statistics.fmean(r["loss"] for r in labelled)
        err = statistics.fmean(r["err"] for r in labelled)
        parts.append(f"{opt:5.0%} {loss:5.2f} {err:5.2f}")
    else:
        parts.append(f"{'-':>5} {'-':>5} {'-':>5}")
    parts.append(f"{statistics.median(r['width'] for r in rows):5.0f}")
    parts.append(f"{statistics.median(depths):5.0f}" if depths else f"{'-':>5}")
    parts.append(f"{sum(r['exact'] for r in rows) / len(rows):5.0%}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> None:
    entries = load()
    if args.rules:
        entries = [e for e in entries if e["set"] in args.rules]
    results: dict[tuple[str, float], list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(
        list
    )
    with tempfile.TemporaryDirectory(prefix="move-quality-baseline-") as tmp:
        trees = {"new": ROOT}
        if args.baseline:
            trees["base"] = baseline_tree(args, Path(tmp))
        workers = {name: Worker(tree, args.egdb_dir) for name, tree in trees.items()}
        print(f"load average before: {os.getloadavg()}", flush=True)
        for i, entry in enumerate(entries):
            for budget in args.budgets:
                order = sorted(workers, reverse=i % 2 == 1)
                for name in order:
                    answer = workers[name].analyse(entry, budget)
                    results[(name, budget)].append((entry, answer))
            if (i + 1) % 20 == 0:
                print(f"  {i + 1}/{len(entries)} positions", flush=True)
        for worker in workers.values():
            worker.close()
    print(f"load average after: {os.getloadavg()}")
    names = ["base", "new"] if args.baseline else ["new"]
    for budget in args.budgets:
        print(f"\nbudget {budget:g} ms: opt = best move optimal, loss = mean seeds lost, err =")
        print("mean |value - true value| (known values only); width, depth: medians")
        header = f"{'set':10} {'phase':6} {'n':>3} {'known':>5}"
        for name in names:
            header += f" | {name + ' opt':>9} {'loss':>5} {'err':>5} {'width':>5} {'depth':>5}"
            header += f" {'exact':>5}"
        print(header)
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, entry in enumerate(entries):
            groups[(entry["set"], entry["phase"])].append(i)
            groups[("all", entry["phase"])].append(i)
            groups[("all", "all")].append(i)
            if entry["phase"] != PHASES[0]:
                groups[("all", "10+")].append(i)
        order = [*rule_sets(), "all"]
        phases = [*PHASES, "10+", "all"]
        for (set_name, phase), indices in sorted(
            groups.items(), key=lambda g: (order.index(g[0][0]), phases.index(g[0][1]))
        ):
            known = sum(1 for i in indices if entries[i].get("values"))
            line = f"{set_name:10} {phase:6} {len(indices):3} {known:5}"
            for name in names:
                rows = [score(*results[(name, budget)][i]) for i in indices]
                line += " | " + summary(rows).rjust(9 + 6 * 5)
            print(line)
        for name in names:
            for entry, answer in results[(name, budget)]:
                wrong = score(entry, answer).get("wrong_bounds")
                if wrong:
                    print(f"WRONG BOUNDS ({name}): {wrong}")
        if args.show_published:
            for i, entry in enumerate(entries):
                if entry.get("source", "search") == "search":
                    continue
                print(f"\n{entry['set']} {entry['position']} (published: {entry['source']})")
                print(f"{'move':>4} {'published':>9}" + "".join(f" | {n:>14}" for n in names))
                for move, value in entry["values"].items():
                    line = f"{move:>4} {value:+9d}"
                    for name in names:
                        v, low, high = results[(name, budget)][i][1]["moves"][move]
                        line += f" | {v:+3d} [{low:+d},{high:+d}]".rjust(17)
                    print(line)
                for name in names:
                    a = results[(name, budget)][i][1]
                    print(
                        f"  {name}: best {a['best']}, value {a['value']:+d} "
                        f"[{a['lower']:+d},{a['upper']:+d}], depth {a['depth']}"
                    )


def baseline_tree(args: argparse.Namespace, tmp: Path) -> Path:
    """The baseline's tree: ``--baseline-tree`` as it is (built already), else
    ``--baseline`` built in ``tmp``."""
    if args.baseline_tree:
        return Path(args.baseline_tree)
    print(f"building {args.baseline} in {tmp} ...", flush=True)
    build_baseline(args.baseline, tmp)
    return tmp


def depth(args: argparse.Namespace) -> None:
    """The 6-seed starts at each budget, ``--repeat`` times, both builds alternately: the depth
    reached and the bounds, medians (the machine's load moves single runs by a depth or two)."""
    from kalah_core import Position

    sets = rule_sets()
    starts = [
        {"set": n, "rules": sets[n].to_json(), "position": Position.start(sets[n]).compact()}
        for n in ("piet-hein", "kalah-ru", "kgp-6x6")
    ]
    with tempfile.TemporaryDirectory(prefix="move-quality-baseline-") as tmp:
        base = baseline_tree(args, Path(tmp))
        workers = {"base": Worker(base, args.egdb_dir), "new": Worker(ROOT, args.egdb_dir)}
        print(f"load average before: {os.getloadavg()}")
        got: dict[tuple[str, str, float], list[dict[str, Any]]] = defaultdict(list)
        for r in range(args.repeat):
            for entry in starts:
                for budget in args.budgets:
                    for name in sorted(workers, reverse=r % 2 == 1):
                        got[(entry["set"], name, budget)].append(
                            workers[name].analyse(entry, budget)
                        )
        for worker in workers.values():
            worker.close()
    print(f"load average after: {os.getloadavg()}")
    print(
        f"{'start':10} {'budget':>6} | {'base depth':>10} {'bounds':>10} | "
        f"{'new depth':>9} {'bounds':>10}"
    )
    for entry in starts:
        for budget in args.budgets:
            line = f"{entry['set']:10} {budget:6g}"
            for name in ("base", "new"):
                answers = got[(entry["set"], name, budget)]
                d = statistics.median(a["depth"] for a in answers)
                low = statistics.median(a["lower"] for a in answers)
                high = statistics.median(a["upper"] for a in answers)
                line += f" | {d:{10 if name == 'base' else 9}g} {f'[{low:+g},{high:+g}]':>10}"
            print(line + f"   ({args.repeat} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("generate", "run", "depth"))
    parser.add_argument("--egdb-dir", default=".egdb", help="folder of *.egdb files to attach")
    parser.add_argument("--baseline", default="HEAD~1", help="commit to compare against ('' none)")
    parser.add_argument(
        "--baseline-tree", default=None, help="a baseline tree built already (skips the build)"
    )
    parser.add_argument("--budgets", type=float, nargs="+", default=[1000.0, 100.0])
    parser.add_argument("--rules", nargs="*", help="only these rule sets")
    parser.add_argument("--label-ms", type=float, default=LABEL_MS)
    parser.add_argument("--show-published", action="store_true")
    parser.add_argument("--repeat", type=int, default=5, help="depth: runs of each start")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args)
    elif args.command == "depth":
        depth(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
