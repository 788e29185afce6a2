"""A plain-Python reference implementation of the rules of docs/rules.md, for testing the engine.

Written from the rule text alone, without the compiled move generator: short and slow on
purpose, so that it is obviously correct. It follows the engine's documented conventions:

- ``play`` returns ``(position after, extra turn, captured, over)``; ``captured`` counts every
  seed the capture put in the store, the capturing seed included (0 when nothing is captured).
- The end of the game is tested in the position after the move, for the player to move next;
  when the game is over, the seeds left in houses are swept into the stores at once.
- ``swap_available`` means the pie rule is still pending: it survives South's first turn and
  is cleared by North's first move (a sowing or the swap), and by the end of the game.

The board is a plain list in sowing order::

    [South house 1, ..., South house h, South store, North house 1, ..., North house h, North store]

so that sowing is "the next index, wrapping around, skipping the opponent's store", and South
house ``i`` (index ``i - 1``) faces North house ``h + 1 - i`` (index ``2h + 1 - i``): the pit
facing index ``k`` is ``2h - k`` on either side.
"""

from __future__ import annotations

from functools import lru_cache

from .errors import IllegalMoveError
from .moves import Move
from .position import Position, Side
from .rules import Rules


def _board(position: Position) -> list[int]:
    return [*position.south, position.stores[0], *position.north, position.stores[1]]


def _houses(board: list[int], side: Side) -> list[int]:
    h = (len(board) - 2) // 2
    return board[0:h] if side is Side.SOUTH else board[h + 1 : 2 * h + 1]


def _store_index(h: int, side: Side) -> int:
    return h if side is Side.SOUTH else 2 * h + 1


def _ended(board: list[int], to_move: Side, rules: Rules) -> bool:
    """The end test of docs/rules.md, with ``to_move`` the player whose turn it is."""
    h = (len(board) - 2) // 2
    total = sum(board)
    if rules.majority and any(2 * board[_store_index(h, s)] > total for s in Side):
        return True
    if sum(_houses(board, to_move)) == 0:
        return True
    return rules.end == "either-side-empty" and sum(_houses(board, to_move.other)) == 0


def _sweep(board: list[int], rules: Rules) -> None:
    """Move the seeds left in houses to the stores (the game is over)."""
    h = (len(board) - 2) // 2
    left = {side: sum(_houses(board, side)) for side in Side}
    empty = [side for side in Side if left[side] == 0]
    if rules.remaining == "empty-side" and empty:
        # The player whose houses are empty takes what is left on the other side.
        board[_store_index(h, empty[0])] += left[empty[0].other]
    else:
        # `owner`, or a majority end with neither side empty.
        for side in Side:
            board[_store_index(h, side)] += left[side]
    for i in range(len(board)):
        if i not in (_store_index(h, Side.SOUTH), _store_index(h, Side.NORTH)):
            board[i] = 0


def _position(board: list[int], to_move: Side, swap_available: bool) -> Position:
    h = (len(board) - 2) // 2
    return Position(
        tuple(board[0:h]),
        tuple(board[h + 1 : 2 * h + 1]),
        (board[h], board[2 * h + 1]),
        to_move,
        swap_available,
    )


def is_over(position: Position, rules: Rules) -> bool:
    """Whether the game has ended in ``position`` (for its player to move)."""
    return _ended(_board(position), position.to_move, rules)


def legal_moves(position: Position, rules: Rules) -> list[Move]:
    """The non-empty houses of the player to move (1..h in order), then ``"swap"`` while the
    pie rule is pending and North is to move; nothing when the game is over."""
    if is_over(position, rules):
        return []
    houses = position.side(position.to_move)
    moves: list[Move] = [i + 1 for i in range(len(houses)) if houses[i] > 0]
    if rules.pie and position.swap_available and position.to_move is Side.NORTH:
        moves.append("swap")
    return moves


def play(position: Position, rules: Rules, move: Move) -> tuple[Position, bool, int, bool]:
    """Play ``move``: ``(position after, extra turn, seeds captured, game over)``."""
    if isinstance(move, bool) or move not in legal_moves(position, rules):
        raise IllegalMoveError("not a legal move (reference)", move=move, position=position)
    if move == "swap":
        # The players exchange sides as they stand: the board stays, North is still to move
        # (now the first player), and the pie rule is spent.
        return (
            Position(position.south, position.north, position.stores, Side.NORTH, False),
            False,
            0,
            False,
        )
    assert isinstance(move, int)
    board = _board(position)
    h = position.houses
    mover = position.to_move
    first = 0 if mover is Side.SOUTH else h + 1  # index of the mover's house 1
    own_store = _store_index(h, mover)
    opponent_store = _store_index(h, mover.other)

    pit = first + move - 1
    seeds = board[pit]
    board[pit] = 0
    while seeds > 0:
        pit = (pit + 1) % len(board)
        if pit == opponent_store:
            continue
        board[pit] += 1
        seeds -= 1

    extra_turn = pit == own_store
    captured = 0
    if first <= pit < first + h and board[pit] == 1:
        facing = 2 * h - pit
        if board[facing] > 0 or rules.capture == "always":
            captured = board[pit] + board[facing]
            board[own_store] += captured
            board[pit] = 0
            board[facing] = 0

    to_move = mover if extra_turn else mover.other
    swap_available = position.swap_available and mover is Side.SOUTH
    over = _ended(board, to_move, rules)
    if over:
        _sweep(board, rules)
        swap_available = False
    return _position(board, to_move, swap_available), extra_turn, captured, over


def final_score(position: Position, rules: Rules) -> tuple[int, int]:
    """The stores (South, North) of a finished game once the seeds left in houses are swept."""
    if not is_over(position, rules):
        raise ValueError(f"the game is not over in {position}")
    board = _board(position)
    _sweep(board, rules)
    return board[position.houses], board[2 * position.houses + 1]


def perft(position: Position, rules: Rules, depth: int) -> int:
    """The number of move sequences (sowings or swaps) of exactly ``depth`` moves; a game
    that ends sooner counts nothing. 1 at depth 0."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    if depth == 0:
        return 1
    return sum(
        perft(play(position, rules, move)[0], rules, depth - 1)
        for move in legal_moves(position, rules)
    )


def move_values(position: Position, rules: Rules) -> dict[Move, int]:
    """Every legal move's exact value for the player to move (see :func:`value`)."""
    values: dict[Move, int] = {}
    for move in legal_moves(position, rules):
        child = play(position, rules, move)[0]
        v = value(child, rules)
        # The swap hands the seat over: North, still to move, now moves for the other side.
        values[move] = v if child.to_move is position.to_move and move != "swap" else -v
    return values


@lru_cache(maxsize=1 << 19)
def value(position: Position, rules: Rules) -> int:
    """The exact value of ``position`` for its player to move (the final store difference,
    mover's minus opponent's, stores included) by plain minimax: no pruning, no table, no
    database, the definition the engine's search is checked against. Memoized; exponential
    in the seeds, so for small positions only."""
    if is_over(position, rules):
        south, north = final_score(position, rules)
        return south - north if position.to_move is Side.SOUTH else north - south
    return max(move_values(position, rules).values())


# The depth-limited search's evaluation (Searcher.eval_kind, eval_weights), for its tests and
# benchmarks/fit_eval.py.


def side_features(mine: tuple[int, ...], theirs: tuple[int, ...]) -> tuple[int, int, int]:
    """Houses that end in their store, the largest capture of a nonempty house one sowing
    without a lap makes, and the seeds sown past the store into the other row."""
    n = len(mine)
    extra = sum(1 for i in range(n) if mine[i] == n - i)
    overflow = sum(max(0, mine[i] - (n - i)) for i in range(n))
    captures = [
        theirs[n - 1 - (i + mine[i])] + 1
        for i in range(n)
        if 0 < mine[i] < n - i and mine[i + mine[i]] == 0 and theirs[n - 1 - (i + mine[i])] > 0
    ]
    return extra, max(captures, default=0), overflow


def evaluation(position: Position, kind: int, weights: tuple[int, ...]) -> int:
    """The depth-limited search's evaluation of ``position`` for its player to move: ``kind``
    0 the store difference, 1 plus a quarter of the house-seed difference (toward zero), 2 plus
    the features weighted by ``weights`` (sixteenths of a seed, rounded to the nearest seed)."""
    me = position.to_move
    mine, theirs = position.side(me), position.side(me.other)
    stores = position.store(me) - position.store(me.other)
    if kind == 0:
        return stores
    if kind == 1:
        held = sum(mine) - sum(theirs)
        return stores + (held // 4 if held >= 0 else -(-held // 4))  # C's /: toward zero
    my_extra, my_capture, my_overflow = side_features(mine, theirs)
    their_extra, their_capture, their_overflow = side_features(theirs, mine)
    total = (
        weights[0] * (sum(mine) - sum(theirs))
        + weights[1] * (my_extra - their_extra)
        + weights[2] * my_capture
        - weights[3] * their_capture
        + weights[4] * (my_overflow - their_overflow)
    )
    rounded = (abs(total) + 8) // 16  # to the nearest seed, halves away from zero
    return stores + (rounded if total >= 0 else -rounded)
