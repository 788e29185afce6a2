"""Board images: a position drawn as a self-contained SVG document, as ``chess.svg`` draws
chess boards.

The board is seen from South unless ``flipped``: South's houses along the bottom, house 1 at
South's own left; North's along the top, house 1 at North's own left (top right from South's
seat); North's store on the left, South's on the right, so sowing runs counter-clockwise. Each
house is numbered on the outside of its row. The side to move is named under the board, and
the pie swap while it is available. A marked move (a house of the side to move, or ``swap``)
gets an outline.

The drawing uses presentation attributes only (no ``<style>``, no script), so it renders the
same as a file, an ``<img>`` and inline, under any Content-Security-Policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from .game import Move
from .position import Position, Side

CELL = 64
"""Pitch of the houses, in SVG user units."""
PAD = 12
LABEL = 20
"""Height of the rows of house numbers above and below the board."""
FOOTER = 30

COLORS = {
    "board": "#d9c7a3",
    "board_edge": "#a88d5f",
    "house": "#f6efe0",
    "house_edge": "#a88d5f",
    "count": "#2b2520",
    "label": "#5c5146",
    "mover": "#1f5fbf",
    "mark": "#c2410c",
    "background": "#fbf8f2",
}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"


@dataclass(frozen=True, slots=True)
class _Geometry:
    houses: int

    @property
    def width(self) -> int:
        return 2 * PAD + (self.houses + 2) * CELL

    @property
    def height(self) -> int:
        return 2 * PAD + 2 * LABEL + 2 * CELL + FOOTER

    def house_center(self, row: int, column: int) -> tuple[float, float]:
        """Centre of the house in ``row`` 0 (top) or 1 (bottom), ``column`` 0 at the left."""
        x = PAD + CELL * (column + 1) + CELL / 2
        y = PAD + LABEL + CELL * row + CELL / 2
        return x, y


def board_svg(
    position: Position,
    *,
    move: Move | None = None,
    flipped: bool = False,
    size: int | None = None,
) -> str:
    """The SVG document of ``position``; ``move`` is outlined, ``flipped`` shows it from North,
    ``size`` sets the width in pixels (default: the natural width, scaled by the viewer)."""
    geometry = _Geometry(position.houses)
    bottom = Side.NORTH if flipped else Side.SOUTH
    top = bottom.other
    width, height = geometry.width, geometry.height
    scale = (size / width) if size else 1.0
    out: list[str] = [
        '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" '
        f'width="{_num(width * scale)}" height="{_num(height * scale)}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f"aria-label={quoteattr(_describe(position, move))}>",
        f"<title>{_escape(_describe(position, move))}</title>",
        f'<rect width="{width}" height="{height}" fill="{COLORS["background"]}"/>',
        f'<rect x="{PAD}" y="{PAD + LABEL}" width="{width - 2 * PAD}" height="{2 * CELL}" '
        f'rx="{CELL / 2:g}" fill="{COLORS["board"]}" stroke="{COLORS["board_edge"]}" '
        'stroke-width="2"/>',
        f'<g font-family={quoteattr(FONT)} text-anchor="middle">',
    ]
    n = position.houses
    for row, side in ((0, top), (1, bottom)):
        counts = position.side(side)
        for house in range(1, n + 1):
            # The bottom row runs left to right from its owner's seat; the top row faces it.
            column = house - 1 if row == 1 else n - house
            x, y = geometry.house_center(row, column)
            marked = move == house and position.to_move is side
            out.append(_house(x, y, counts[house - 1], marked))
            label_y = y + CELL / 2 + LABEL - 5 if row == 1 else y - CELL / 2 - 6
            mover = position.to_move is side
            out.append(
                f'<text x="{_num(x)}" y="{_num(label_y)}" font-size="13" '
                f'fill="{COLORS["mover"] if mover else COLORS["label"]}"'
                f"{' font-weight=' + quoteattr('bold') if mover else ''}>{house}</text>"
            )
    for side, left in ((top, True), (bottom, False)):
        out.append(_store(geometry, left, position.store(side), position.to_move is side))
        # The store's owner, written on the owner's row of labels.
        x = PAD + CELL / 2 if left else width - PAD - CELL / 2
        y = PAD + LABEL - 6 if left else PAD + LABEL + 2 * CELL + LABEL - 5
        mover = position.to_move is side
        out.append(
            f'<text x="{_num(x)}" y="{_num(y)}" font-size="12" '
            f'fill="{COLORS["mover"] if mover else COLORS["label"]}"'
            f"{' font-weight=' + quoteattr('bold') if mover else ''}>"
            f"{side.value.capitalize()}</text>"
        )
    out.append(_footer(geometry, position, move, bottom))
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def _house(x: float, y: float, count: int, marked: bool) -> str:
    radius = CELL / 2 - 6
    edge, stroke = (COLORS["mark"], 4) if marked else (COLORS["house_edge"], 1.5)
    return (
        f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(radius)}" fill="{COLORS["house"]}" '
        f'stroke="{edge}" stroke-width="{stroke}"/>'
        f'<text x="{_num(x)}" y="{_num(y + 8)}" font-size="{_count_size(count)}" '
        f'fill="{COLORS["count"]}">{count}</text>'
    )


def _store(geometry: _Geometry, left: bool, count: int, mover: bool) -> str:
    x = PAD + 6 if left else geometry.width - PAD - CELL + 6
    y = PAD + LABEL + 8
    w, h = CELL - 12, 2 * CELL - 16
    return (
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{w / 2:g}" '
        f'fill="{COLORS["house"]}" stroke="{COLORS["mover"] if mover else COLORS["house_edge"]}" '
        f'stroke-width="{2.5 if mover else 1.5}"/>'
        f'<text x="{_num(x + w / 2)}" y="{_num(y + h / 2 + 9)}" '
        f'font-size="{_count_size(count) + 2}" font-weight="bold" fill="{COLORS["count"]}">'
        f"{count}</text>"
    )


def _footer(geometry: _Geometry, position: Position, move: Move | None, bottom: Side) -> str:
    words = [f"{position.to_move.value.capitalize()} to move"]
    if position.swap_available:
        words.append("swap available")
    if move is not None:
        words.append(f"move {move}")
    words.append(f"(seen from {bottom.value.capitalize()})")
    y = geometry.height - PAD - 8
    return (
        f'<text x="{geometry.width / 2:g}" y="{y}" font-size="15" '
        f'fill="{COLORS["label"]}">{_escape(" · ".join(words))}</text>'
    )


def _describe(position: Position, move: Move | None) -> str:
    text = (
        f"Kalah board {position.compact()}: south {list(position.south)} store "
        f"{position.stores[0]}, north {list(position.north)} store {position.stores[1]}, "
        f"{position.to_move.value} to move"
    )
    if position.swap_available:
        text += ", swap available"
    if move is not None:
        text += f", move {move} marked"
    return text


def _count_size(count: int) -> int:
    return 22 if count < 100 else 18


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
