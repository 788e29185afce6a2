"""A long proof timed against a baseline commit: Kalah(6,N) from the start, empty capture.

    python benchmarks/long_proof.py --baseline HEAD~1 [--seeds 5] [--threads 1 2]
                                    [--egdb-dir /work/egdb] [--only new|base] [--tt-mb 256]

Proves the value of the start (``prove="value"``, 24-seed database, a 256 MiB table as the hard
set; ``--tt-mb 512`` gives it the memory of the published solver's ``-t 25``: 2^25 entries of 16
bytes) with the baseline's kalah_core and this tree's, one after the other in worker processes
of ``hard_set.py`` (databases read through before the first proof), for each thread count. It
prints each proof's value, time and nodes, and the ratio. Kalah(6,5) takes minutes per proof;
run nothing else beside it.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from hard_set import ROOT, Worker, build_baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD~1", help="commit to compare against")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--egdb-dir", default="/work/egdb", help="holds the 24-seed databases")
    parser.add_argument("--only", choices=("base", "new"))
    parser.add_argument("--tt-mb", type=int, default=256, help="table size of both builds")
    args = parser.parse_args()
    rules = {"houses": 6, "seeds": args.seeds, "capture": "always"}
    entry = {"rules": rules, "position": "start"}
    with tempfile.TemporaryDirectory(prefix="long-proof-baseline-") as tmp:
        trees = {"new": ROOT}
        if args.only != "new":
            print(f"building {args.baseline} in {tmp} ...", flush=True)
            build_baseline(args.baseline, Path(tmp))
            trees["base"] = Path(tmp)
        if args.only == "base":
            del trees["new"]
        workers = {name: Worker(tree, args.egdb_dir) for name, tree in trees.items()}
        for worker in workers.values():  # map and read the database, untimed
            worker.solve(entry, 1, 1_000, tt_mb=args.tt_mb)
        for threads in args.threads:
            got: dict[str, Any] = {}
            for name, worker in workers.items():
                got[name] = answer = worker.solve(entry, threads, tt_mb=args.tt_mb)
                print(
                    f"Kalah(6,{args.seeds}) {threads} thread(s), {name}: value "
                    f"{answer['value']:+d}, {answer['seconds']:.1f} s, {answer['nodes']:,} nodes",
                    flush=True,
                )
            if len(got) == 2:
                if got["base"]["value"] != got["new"]["value"]:
                    raise SystemExit(f"the values differ: {got}")
                ratio = got["base"]["seconds"] / got["new"]["seconds"]
                print(f"Kalah(6,{args.seeds}) {threads} thread(s): base/new {ratio:.2f}x")
        for worker in workers.values():
            worker.close()


if __name__ == "__main__":
    main()
