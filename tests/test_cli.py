"""The ``kalah`` command line, run in-process through ``main`` and once as the installed script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kalah_core import Position, Rules
from kalah_core.cli import build_parser, main, rules_from_args

EXAMPLE = "45-46, 1*-5, 2-, -63*, 6-, -561646562, 4-3, 656-"
EXAMPLE_JSON = {
    "position": {
        "south": [0, 0, 0, 0, 0, 0],
        "north": [0, 0, 0, 0, 0, 0],
        "stores": [12, 24],
        "to_move": "south",
        "swap_available": False,
    },
    "over": True,
    "score": [12, 24],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, argv[0], "--json", *argv[1:])
    assert code == 0, err
    assert err == ""
    return json.loads(out)


# ----------------------------------------------------------------------------- replay


def test_replay_example_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "replay", "--rules", "kalaha", EXAMPLE) == EXAMPLE_JSON


@pytest.mark.system
def test_replay_example_via_the_installed_script() -> None:
    script = Path(sys.executable).with_name("kalah")
    found = str(script) if script.exists() else shutil.which("kalah")
    assert found, "the 'kalah' console script is not installed"
    env = os.environ | {"PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["kalah", "replay", "--rules", "kalaha", "--json", EXAMPLE],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == EXAMPLE_JSON


def test_replay_human(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", "--rules", "kalaha", EXAMPLE)
    assert code == 0 and err == ""
    assert "45-46, 1*-5, 2-63*, 6-561646562*, 4-3, 656-" in out  # the canonical spelling
    assert "000000-12-000000-24-s" in out
    assert "game over" in out
    assert "South 12, North 24" in out
    assert "North wins" in out


def test_replay_in_progress(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "replay", "--rules", "kalaha", "(1-2, 5-31, 2-5, 3-2, 2*-1*)")
    assert data == {
        "position": Position.parse("100706-10-002005-5-s").to_json(),
        "over": False,
        "score": None,
    }
    code, out, _ = run(capsys, "replay", "--rules", "kalaha", "41*-")
    assert code == 0
    assert "044044-5-330333-0-n" in out
    assert "North to move" in out


def test_replay_from_a_position(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "replay", "--rules", "kalaha", "--from", "100706-10-002005-5-s", "4-")
    assert data["position"] == Position.parse("100017-11-113105-5-n").to_json()
    data = run_json(capsys, "replay", "--from", "start", "3-")
    assert data["position"]["to_move"] == "south"  # 3 ends in the store under kalah


def test_replay_game_starting_with_a_dash(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "replay", "--from", "055554-0-444444-0-n", "--", "-1")
    assert data["position"]["stores"] == [0, 0]
    assert data["position"]["to_move"] == "south"


def test_replay_pie_swap(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "replay", "--rules", "kalah-pie", "1-swap")
    assert data["position"]["to_move"] == "north"
    assert data["position"]["swap_available"] is False


# ----------------------------------------------------------------------------- show


def test_show_start_human(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "start")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "444444-0-444444-0-s" in out
    assert "South to move" in out
    # North's houses on top, numbered h..1 from the left; South's 1..h at the bottom.
    assert lines[0].split() == ["6", "5", "4", "3", "2", "1", "North"]
    assert lines[6].split() == ["1", "2", "3", "4", "5", "6", "South"]


def test_show_board_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "123456-7-abcdef-8-n")
    assert code == 0
    lines = out.splitlines()
    numbers = [[int(t) for t in line.replace("|", " ").split() if t.isdigit()] for line in lines]
    assert numbers[2] == [15, 14, 13, 12, 11, 10]  # North seen from North: house 6 left
    assert numbers[3] == [8, 7]  # North's store on the left, South's on the right
    assert numbers[4] == [1, 2, 3, 4, 5, 6]
    assert "North to move" in out


def test_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "show", "--rules", "kalah-pie", "start")
    assert data["position"] == Position.start(Rules.preset("kalah-pie")).to_json()
    assert data["compact"] == "444444-0-444444-0-sp"
    assert data["over"] is False
    assert data["score"] is None
    assert data["rules"] == Rules.preset("kalah-pie").to_json()


def test_show_accepts_the_json_form(capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps({"south": [1, 0, 2], "north": [0, 3, 0], "to_move": "north"})
    data = run_json(capsys, "show", "--houses", "3", text)
    assert data["compact"] == "102-0-030-0-n"


def test_show_game_over(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "000000-20-100000-27-s")
    assert code == 0
    assert "game over: South 20, North 28: North wins" in out
    data = run_json(capsys, "show", "000000-20-100000-27-s")
    assert data["over"] is True and data["score"] == [20, 28]
    # Under mover-empty the game goes on while the mover still has seeds.
    data = run_json(capsys, "show", "--end", "mover-empty", "000000-20-100000-27-n")
    assert data["over"] is False and data["score"] is None


def test_show_draw(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "000000-24-000000-24-s")
    assert code == 0
    assert "draw" in out


def test_show_big_counts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "--houses", "1", "~41-0-0-0-s")
    assert code == 0
    assert "249" in out


# ----------------------------------------------------------------------------- moves


def test_moves_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "moves", "start")
    assert data["position"] == "444444-0-444444-0-s"
    assert [m["move"] for m in data["moves"]] == [1, 2, 3, 4, 5, 6]
    third = data["moves"][2]
    assert third == {
        "move": 3,
        "position": "440555-1-444444-0-s",
        "extra_turn": True,
        "captured": 0,
        "over": False,
        "score": None,
    }
    assert data["moves"][0]["position"] == "055554-0-444444-0-n"


def test_moves_capture_and_end(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "moves", "--rules", "kalaha", "100706-10-002005-5-s")
    by_move = {m["move"]: m for m in data["moves"]}
    assert set(by_move) == {1, 4, 6}
    assert by_move[1]["captured"] == 0
    data = run_json(capsys, "moves", "--houses", "2", "10-0-10-0-s")
    (only,) = data["moves"]
    assert only == {
        "move": 1,
        "position": "00-2-00-0-n",
        "extra_turn": False,
        "captured": 2,
        "over": True,
        "score": [2, 0],
    }


def test_moves_swap(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "moves", "--rules", "kalah-pie", "055554-0-444444-0-np")
    assert data["moves"][-1]["move"] == "swap"
    assert data["moves"][-1]["position"] == "055554-0-444444-0-n"


def test_moves_human(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "moves", "start")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "South to move" in lines[0]
    assert lines[1].split() == ["move", "position", "extra", "captured", "over"]
    assert lines[4].split() == ["3", "440555-1-444444-0-s", "yes", "0", "no"]
    assert len(lines) == 2 + 6


def test_moves_when_over(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "moves", "000000-20-100000-27-s")
    assert code == 0
    assert "game is over" in out
    assert run_json(capsys, "moves", "000000-20-100000-27-s")["moves"] == []


# ----------------------------------------------------------------------------- rule options


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], Rules.preset("kalah")),
        (["--rules", "kalaha"], Rules.preset("kalaha")),
        (["--rules", "kalaha", "--seeds", "5"], Rules.preset("kalaha", seeds=5)),
        (["--houses", "4", "--seeds", "2"], Rules(houses=4, seeds=2)),
        (["--capture", "always"], Rules(capture="always")),
        (["--end", "mover-empty"], Rules(end="mover-empty")),
        (["--remaining", "empty-side"], Rules(remaining="empty-side")),
        (["--majority"], Rules(majority=True)),
        (["--rules", "kalah-ru", "--no-majority"], Rules.preset("kalah-ru", majority=False)),
        (["--pie"], Rules.preset("kalah-pie")),
        (["--rules", "kalah-pie", "--no-pie"], Rules.preset("kalah")),
        (["--rules", '{"preset": "kalaha", "seeds": 4}'], Rules.preset("kalaha", seeds=4)),
    ],
)
def test_rule_options(argv: list[str], expected: Rules) -> None:
    args = build_parser().parse_args(["show", *argv, "start"])
    assert rules_from_args(args) == expected


def test_rule_options_reach_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "show", "--rules", "kalaha", "--houses", "3", "--seeds", "5", "start")
    assert data["compact"] == "555-0-555-0-s"
    assert data["rules"]["end"] == "mover-empty"


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "field", "words"),
    [
        (["show", "--rules", "oware", "start"], "preset", "oware"),
        (["show", "--houses", "13", "start"], "houses", "1..12"),
        (["show", "--seeds", "0", "start"], "seeds", "1..24"),
        (["show", "--capture", "sometimes", "start"], "capture", "'always'"),
        (["moves", "--end", "never", "start"], "end", "mover-empty"),
        (["moves", "--remaining", "x", "start"], "remaining", "empty-side"),
        (["show", "--rules", "{oops", "start"], "rules", "JSON"),
        (["show", "444444-0-444444-0-x"], "position", "compact position"),
        (["show", "4444-0-4444-0-s"], "position", "rules have 6"),
        (["show", "444444-0-444444-0-sp"], "position", "pie"),
        (["show", '{"south": [4, 4, 4, 4, 4, 4], "north": "x"}'], "position.north", "north"),
        (["moves", "{not json"], "position", "JSON"),
        (["replay", "--rules", "kalaha", "1-2, 1-"], "move", "house 1 is empty"),
        (["replay", "--rules", "kalaha", "1*-"], "move", "captures nothing"),
        (["replay", "1-x"], "game", "unexpected 'x'"),
        (["replay", "--from", "nowhere", "1-"], "position", "nowhere"),
    ],
)
def test_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], field: str, words: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "error" in err and words in err, err

    code, out, err = run(capsys, *argv, "--json")
    assert code == 2
    assert json.loads(out) == {"error": json.loads(out)["error"], "field": field}
    assert words in json.loads(out)["error"]
    assert words in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["fly"], ["show"], ["show", "--houses", "six", "start"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    capsys.readouterr()


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--rules", "--houses", "--seeds", "--capture", "--end", "--remaining"):
        assert option in out
    assert "--majority, --no-majority" in out and "--pie, --no-pie" in out
    assert "--from" in out and "--json" in out


# ----------------------------------------------------------------------------- layout

ENGINE_COMMANDS = ("show", "moves", "replay", "solve", "bench", "egdb")
SERVICE_COMMANDS = ("analyse", "best-move", "analyse-game", "keys", "serve", "batch", "worker")


def test_every_command_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    """The engine's own commands and the service's (added through entry points)."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ENGINE_COMMANDS + SERVICE_COMMANDS:
        assert f"    {command} " in out or f"    {command}\n" in out, command
    assert "docs/rules.md" in out


SERVICE = ("api", "kalah_service")  # its source folder and its installed name


def test_the_engine_never_imports_the_service() -> None:
    """No module of kalah_core imports the service (it finds its commands by entry point)."""
    import ast

    package = Path(__file__).resolve().parents[1] / "kalah_core"
    for path in package.glob("*.py*"):
        if path.suffix not in (".py", ".pyx", ".pyi"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".pyx":  # Cython: not Python syntax; the import lines are
            lines = [line.split() for line in text.splitlines()]
            assert not [
                w
                for w in lines
                if w[:1] in (["import"], ["from"]) and w[1:2] in (["api"], ["kalah_service"])
            ]
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                assert not [a for a in node.names if a.name.split(".")[0] in SERVICE], path
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                assert (node.module or "").split(".")[0] not in SERVICE, path


def test_an_unavailable_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command whose entry point cannot load (the server extra missing) is still listed and
    answers any arguments with one line on stderr and a non-zero status."""
    from importlib import metadata

    from kalah_core import cli

    broken = metadata.EntryPoint("analyse", "kalah_missing_module:add", cli.COMMANDS_GROUP)

    def entry_points(group: str) -> list[metadata.EntryPoint]:
        assert group == cli.COMMANDS_GROUP
        return [broken]

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    code, out, err = run(capsys, "analyse", "start", "--time-ms", "5", "--json")
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and err.startswith("kalah analyse: ")
    assert "kalah_missing_module" in err


@pytest.mark.system
def test_the_service_commands_name_the_extra_without_it() -> None:
    """kalah_service.ops.commands, loaded without the server extra, fails with the line to print."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.metadata as m; real = m.distribution\n"
            "def fake(name):\n"
            "    if name.lower() == 'flask': raise m.PackageNotFoundError(name)\n"
            "    return real(name)\n"
            "m.distribution = fake\n"
            "from kalah_core.cli import main; raise SystemExit(main(['analyse', 'start']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'kalah-core[server]'" in done.stderr and "flask" in done.stderr


@pytest.mark.system
def test_python_m_kalah_core() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kalah_core", "show", "--json", "start"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["compact"] == "444444-0-444444-0-s"


@pytest.mark.system
def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    script = Path(sys.executable).with_name("kalah")
    done = subprocess.run(
        f"'{script}' solve --houses 3 --seeds 3 start | true",  # the reader is gone at once
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from kalah_core import __version__
    from kalah_core.solver import ENGINE_VERSION

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"kalah {__version__} (engine {ENGINE_VERSION})\n"


def test_help_describes_presets_in_a_players_words(capsys: pytest.CaptureFixture[str]) -> None:
    """The rule texts' catalogue numbers ("seed 000") are background, not user vocabulary."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "kalaha: Finnish kalaha, 3 seeds" in " ".join(text.split())
    for command in ("replay", "solve", "batch", "analyse-game"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text += capsys.readouterr().out
    assert "seed 00" not in text and "seed-00" not in text


def test_the_built_in_commands_are_the_parsers_own() -> None:
    """main() skips the plugins for the commands in BUILT_IN: they must be exactly this
    package's (a command missing there would lose nothing; one too many would hide a plugin)."""
    import argparse

    from kalah_core import cli

    parser = build_parser(plugins=False)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == cli.BUILT_IN


@pytest.mark.system
def test_solve_imports_only_what_it_needs(tmp_path: Path) -> None:
    """`kalah solve` reads no entry point and imports neither the book builders, the task
    executors (multiprocessing), the KGP agent nor what only builds and digests need: each
    adds to every solve's start-up."""
    code = (
        "import sys; from kalah_core.cli import main\n"
        "code = main(['solve', 'start', '--houses', '3', '--seeds', '2', '--tt-mb', '1', "
        "'--threads', '1', '--no-progress', '--json'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "raise SystemExit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KALAH_EGDB_PATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.splitlines()[-1].split())
    assert "kalah_core.solver" in modules  # the listing is real
    unwanted = {
        "importlib.metadata",
        "multiprocessing",
        "kalah_core.book_build",
        "kalah_core.deepbook_build",
        "kalah_core.deepbook_refine",
        "kalah_core.prove",
        "kalah_core.tasks",
        "kalah_core.kgp",
        "kalah_service",
        "platformdirs",  # only for the cache folder, not with KALAH_EGDB_PATH set
        "tempfile",
        "hashlib",
    }
    assert not modules & unwanted, modules & unwanted


@pytest.mark.system
def test_each_command_imports_only_its_own_groups_modules() -> None:
    """A command group's module imports the engine modules its commands need when one of them
    runs: `kalah show` loads neither the search nor the databases nor the books."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from kalah_core.cli import main\n"
            "code = main(['show', 'start', '--json'])\n"
            "print(' '.join(sorted(sys.modules)))\n"
            "raise SystemExit(code)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.splitlines()[-1].split())
    assert "kalah_core.cli.cmd_position" in modules  # the listing is real
    unwanted = {
        "kalah_core.solver",
        "kalah_core._search",
        "kalah_core._table",
        "kalah_core.egdb",
        "kalah_core.databases",
        "kalah_core.book",
        "kalah_core.deepbook",
        "kalah_core.answer",
    }
    assert not modules & unwanted, modules & unwanted
