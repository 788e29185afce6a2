"""Issue 47, finding 1 on the command line: positions with more than 255 seeds in a pit are
solved, analysed and batched like any other (they crashed in the book's byte keys), and the
books say they do not hold them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalah_core import Position, Rules
from kalah_core.book import BookError, board_key, find_key, shipped
from kalah_core.cli import main
from kalah_core.deepbook import deep_key, find_deep_key
from kalah_core.deepbook import shipped as shipped_deep

BIG_HOUSE = "~4800001-0-100000-0-s"
BIG_STORE = "YYYO00-260-aaaaaa-0-s"
CASES = [(BIG_HOUSE, "kalah"), (BIG_HOUSE, "piet-hein"), (BIG_STORE, "kalah-ru")]


@pytest.mark.parametrize(("position", "preset"), CASES)
@pytest.mark.parametrize("command", ["solve", "analyse", "best-move"])
def test_commands_answer(
    capsys: pytest.CaptureFixture[str], command: str, position: str, preset: str
) -> None:
    budget = ["--nodes", "2000"] if command == "solve" else ["--time-ms", "50"]
    code = main([command, position, "--rules", preset, "--json", *budget])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    assert json.loads(out)


def test_local_batch_writes_every_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    items = [BIG_HOUSE, {"position": BIG_STORE, "rules": "kalah-ru"}, "start"]
    source.write_text("".join(json.dumps(i) + "\n" for i in items))
    out = tmp_path / "out.jsonl"
    argv = ["batch", str(source), "-o", str(out), "--workers", "1", "--quiet", "--time-ms", "50"]
    assert main(argv) == 0, capsys.readouterr().err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["position"] for line in lines] == [BIG_HOUSE, BIG_STORE, "444444-0-444444-0-s"]


def test_books_hold_no_position_they_cannot_key() -> None:
    kalah, ru = Rules.preset("kalah"), Rules.preset("kalah-ru")
    big, big_store = Position.parse(BIG_HOUSE), Position.parse(BIG_STORE)
    assert find_key(big) is None and find_deep_key(big_store, ru) is None
    assert shipped().move_values(big, kalah) is None
    assert shipped_deep().record(big_store, ru) is None
    with pytest.raises(BookError, match="more than 255"):
        board_key(big)
    with pytest.raises(BookError, match="more than 255"):
        deep_key(big_store, ru)
    # at the limit a key still packs: 255 seeds in a house
    assert find_key(Position((255, 0, 0, 0, 0, 1), (1,) + (0,) * 5, (0, 0))) is not None
