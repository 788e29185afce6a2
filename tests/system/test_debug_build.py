"""The search's return contract (see ``exact`` in kalah_core/_search.pyx), checked by a debug
build: the extensions compiled with KALAH_DEBUG=1 in a scratch copy of the package compare every
exact-search answer on a small subtree with plain minimax while solving small games."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kalah_core import Rules
from kalah_core.position import parse_position
from kalah_core.solver import Engine

ROOT = Path(__file__).resolve().parents[2]

# Small games under every option that changes the search's paths: the table keyed on the store
# (majority), the pending swap (pie), both capture and end rules.
GAMES = [
    Rules(houses=3, seeds=3),
    Rules(houses=4, seeds=2, capture="always"),
    Rules.preset("kalah-ru", houses=3, seeds=3),
    Rules.preset("kalah-pie", houses=3, seeds=2),
    Rules.preset("kalaha", houses=3, seeds=3),
    Rules(houses=4, seeds=3),
]

SCRIPT = """
import json, sys
from kalah_core import Rules
from kalah_core._search import Searcher
from kalah_core.position import parse_position
from kalah_core.solver import Engine

assert Searcher(1).debug_build
engine = Engine(tt_mb=4)
values = []
for data in json.loads(sys.argv[1]):
    rules = Rules.from_json(data)
    for prove in ("all", "value"):
        engine.clear()
        a = engine.analyse(parse_position("start", rules), rules, prove=prove)
    values.append(a.value)
checked, broken = engine.searcher.contract_checks

# With a database of 2 seeds: its leaves, and the boards just above it, searched without the
# table (unstored_above_db).
from kalah_core import egdb
from kalah_core.egdb import EndgameDatabase
rules = Rules.from_json(json.loads(sys.argv[2]))
path = sys.argv[3]
egdb.build(path, rules, 2, progress=False)
with_db = Engine(4, [EndgameDatabase.open(path, rules)])
for prove in ("all", "value"):
    with_db.clear()
    a = with_db.analyse(parse_position("start", rules), rules, prove=prove)
db_checked, db_broken = with_db.searcher.contract_checks

# Two threads: deferred children, and searches cancelled when the other thread decides a node.
rules = Rules.from_json(json.loads(sys.argv[4]))
parallel = Engine(tt_mb=4, threads=2)
for prove in ("all", "value"):
    parallel.clear()
    p = parallel.analyse(parse_position("start", rules), rules, prove=prove)
par_checked, par_broken = parallel.searcher.contract_checks
print(json.dumps({"values": values, "checked": checked, "broken": broken, "db_value": a.value,
                  "db_checked": db_checked, "db_broken": db_broken, "par_value": p.value,
                  "par_checked": par_checked, "par_broken": par_broken}))
"""

DB_GAME = Rules(houses=4, seeds=3)
PARALLEL_GAME = Rules(houses=4, seeds=4)


def test_debug_build_checks_the_return_contract(tmp_path: Path) -> None:
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path)
    shutil.copytree(
        ROOT / "kalah_core",
        tmp_path / "kalah_core",
        ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"),
    )
    env = {**os.environ, "KALAH_DEBUG": "1", "PYTHONPATH": str(tmp_path)}
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
    )
    games = json.dumps([rules.to_json() for rules in GAMES])
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            games,
            json.dumps(DB_GAME.to_json()),
            str(tmp_path / "db.egdb"),
            json.dumps(PARALLEL_GAME.to_json()),
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.stdout)
    assert result["broken"] == 0
    assert result["checked"] > 1000
    assert result["db_broken"] == 0
    assert result["db_checked"] > 1000
    # The debug build solves the games to the values of the normal build.
    engine = Engine(tt_mb=4)
    assert result["values"] == [
        engine.analyse(parse_position("start", rules), rules).value for rules in GAMES
    ]
    assert result["db_value"] == engine.analyse(parse_position("start", DB_GAME), DB_GAME).value
    assert result["par_broken"] == 0
    assert result["par_checked"] > 1000
    start = parse_position("start", PARALLEL_GAME)
    assert result["par_value"] == engine.analyse(start, PARALLEL_GAME).value
