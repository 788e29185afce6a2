"""Type stub of the compiled search (_search.pyx)."""

from ._egdb import EndgameTable
from .position import Position
from .rules import Rules

DEFAULT_EVAL_WEIGHTS: tuple[int, ...]

def board_evaluation(houses: int) -> int:
    """The depth-limited search's evaluation on ``houses`` a side: 1 (sides) up to 6, else 2
    (features)."""

class Searcher:
    size_bytes: int
    """The table's cap: ``tt_mb`` rounded down to a power-of-two number of buckets."""
    etc_min_seeds: int
    eval_kind: int
    """0 stores, 1 sides, 2 features; set -1 for the board's (:func:`board_evaluation`), the
    default."""
    eval_weights: tuple[int, ...]
    """Evaluation 2's weights in sixteenths of a seed (house seeds, extra-turn houses, the
    mover's capture, the opponent's capture, seeds sown past the store)."""
    unstored_above_db: int
    threads: int
    smp: int
    heuristic_move_depth: int
    same_draft: bool
    """A heuristic table entry cuts only a search of its own depth (default False)."""
    def __init__(self, tt_mb: int = 64, start_mb: int = 16) -> None: ...
    @property
    def table_bytes(self) -> int:
        """The table's memory in use now: ``start_mb`` at first (0: the cap), growing as it
        fills up to ``size_bytes``."""
    def grow_table(self) -> bool:
        """Grow the table one step now; False when it is at its cap already."""
    def clear(self) -> None: ...
    def side_table(self, tt_mb: int) -> None: ...
    def main_table(self, import_depth: int = 0) -> int: ...
    def add_database(
        self, key: tuple[int, str, str, str, int], table: EndgameTable, max_seeds: int
    ) -> None: ...
    @property
    def database_seeds(self) -> int: ...
    def begin(
        self, position: Position, rules: Rules, time_ms: float = 0, nodes: int = 0
    ) -> None: ...
    def set_budget(self, time_ms: float, nodes: int) -> None: ...
    def mtdf(
        self,
        position: Position,
        rules: Rules,
        guess: int,
        lower: int,
        upper: int,
        time_ms: float = 0,
        nodes: int = 0,
        fresh: bool = True,
        pause_after: int = 0,
    ) -> tuple[int, int, int, bool]: ...
    def probe(self, position: Position, rules: Rules, alpha: int, beta: int) -> int | None: ...
    def test(self, position: Position, rules: Rules, beta: int) -> bool | None: ...
    def heuristic(
        self,
        position: Position,
        rules: Rules,
        depth: int,
        alpha: int = -1000,
        beta: int = 1000,
        time_ms: float = 0,
        nodes: int = 0,
        fresh: bool = True,
    ) -> tuple[int, int, bool, int]: ...
    def table_move(self, position: Position) -> int | None: ...
    def table_bounds(self, position: Position) -> tuple[int, int] | None: ...
    @property
    def cut_move(self) -> int | None: ...
    @property
    def nodes(self) -> int: ...
    @property
    def expanded(self) -> int: ...
    @property
    def live_nodes(self) -> int: ...
    @property
    def live_bounds(self) -> tuple[int, int]: ...
    def interrupt(self) -> None: ...
    def clear_interrupt(self) -> None: ...
    @property
    def interrupted(self) -> bool: ...
    @property
    def cancelled(self) -> int: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def debug_build(self) -> bool: ...
    @property
    def contract_checks(self) -> tuple[int, int]: ...
