"""kalah_core.svg: a well-formed SVG document that draws every count where the rule texts put
it (houses numbered from each player's own left, North's store on the left)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kalah_core import Position, Rules, Side
from kalah_core.svg import board_svg

NS = {"svg": "http://www.w3.org/2000/svg"}


def _circles(root: ET.Element) -> list[tuple[float, float, str]]:
    """(x, y, count) of every house, read from the drawing."""
    circles = root.findall(".//svg:circle", NS)
    texts = [t for t in root.findall(".//svg:text", NS) if t.get("font-size") in ("22", "18")]
    counts = {(float(t.get("x", 0)), float(t.get("y", 0)) - 8): t.text or "" for t in texts}
    return [
        (
            float(c.get("cx", 0)),
            float(c.get("cy", 0)),
            counts[(float(c.get("cx", 0)), float(c.get("cy", 0)))],
        )
        for c in circles
    ]


def test_houses_are_where_the_rule_texts_put_them() -> None:
    position = Position((1, 2, 3, 4, 5, 6), (7, 8, 9, 10, 11, 12), (13, 14), Side.SOUTH)
    root = ET.fromstring(board_svg(position))
    houses = _circles(root)
    bottom = sorted((h for h in houses if h[1] == max(y for _, y, _ in houses)), key=lambda h: h[0])
    top = sorted((h for h in houses if h[1] == min(y for _, y, _ in houses)), key=lambda h: h[0])
    assert [h[2] for h in bottom] == ["1", "2", "3", "4", "5", "6"]  # South's 1 at its left
    assert [h[2] for h in top] == ["12", "11", "10", "9", "8", "7"]  # North's 1 at its left
    stores = root.findall(".//svg:rect[@rx]", NS)[1:]  # after the board's own outline
    left, right = sorted(stores, key=lambda r: float(r.get("x", 0)))
    counts = {
        t.text: float(t.get("x", 0))
        for t in root.findall(".//svg:text[@font-weight='bold']", NS)
        if t.text and t.text.isdigit()
    }
    assert float(left.get("x", 0)) < counts["14"] < float(right.get("x", 0)) < counts["13"]


def test_flipped_puts_north_at_the_bottom() -> None:
    position = Position((1, 2, 3, 4, 5, 6), (7, 8, 9, 10, 11, 12), (13, 14), Side.NORTH)
    houses = _circles(ET.fromstring(board_svg(position, flipped=True)))
    bottom = sorted((h for h in houses if h[1] == max(y for _, y, _ in houses)), key=lambda h: h[0])
    assert [h[2] for h in bottom] == ["7", "8", "9", "10", "11", "12"]


def test_a_marked_move_is_outlined_and_named() -> None:
    position = Position.start(Rules())
    text = board_svg(position, move=3)
    root = ET.fromstring(text)
    outlined = [c for c in root.findall(".//svg:circle", NS) if c.get("stroke-width") == "4"]
    assert len(outlined) == 1
    assert "move 3 marked" in (root.get("aria-label") or "")
    assert board_svg(position).count('stroke-width="4"') == 0


@given(
    houses=st.integers(1, 8),
    data=st.data(),
    side=st.sampled_from(list(Side)),
    flipped=st.booleans(),
    size=st.none() | st.integers(64, 2048),
)
def test_any_valid_position_is_a_well_formed_document(
    houses: int, data: st.DataObject, side: Side, flipped: bool, size: int | None
) -> None:
    counts = st.lists(st.integers(0, 120), min_size=houses, max_size=houses)
    position = Position(
        tuple(data.draw(counts)), tuple(data.draw(counts)), (data.draw(st.integers(0, 40)), 0), side
    )
    root = ET.fromstring(board_svg(position, flipped=flipped, size=size))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//svg:circle", NS)) == 2 * houses
    if size:
        assert float(root.get("width", 0)) == pytest.approx(size, abs=0.1)
