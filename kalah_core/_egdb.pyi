"""Type stub of the compiled endgame database (_egdb.pyx)."""

from typing import BinaryIO

MAX_SEEDS: int
"""The largest database: g must fit a signed byte."""
HEADER_SIZE: int

def level_size(houses: int, n: int) -> int: ...
def entry_count(houses: int, max_seeds: int) -> int: ...

class DatabaseBuilder:
    threads: int
    def __init__(
        self,
        houses: int,
        capture_always: bool,
        end_mover_empty: bool,
        remaining_empty_side: bool,
        max_seeds: int,
        threads: int,
    ) -> None: ...
    @property
    def entries(self) -> int: ...
    def level_range(self, n: int) -> tuple[int, int]: ...
    def run(self, n: int, start: int, stop: int) -> None: ...
    def checksum(self) -> int: ...
    def write(self, f: BinaryIO, block: int = ...) -> None: ...

class EndgameTable:
    path: object
    capture_always: int
    end_mover_empty: int
    remaining_empty_side: int
    entries: int
    checksum: int
    def __init__(
        self,
        path: object,
        houses: int,
        max_seeds: int,
        header_size: int,
        capture_always: bool,
        end_mover_empty: bool,
        remaining_empty_side: bool,
        checksum: int = 0,
    ) -> None: ...
    @property
    def houses(self) -> int: ...
    @property
    def max_seeds(self) -> int: ...
    def g(self, mine: tuple[int, ...], theirs: tuple[int, ...]) -> int: ...
    def rank(self, mine: tuple[int, ...], theirs: tuple[int, ...]) -> int: ...
    def board_at(self, n: int, r: int) -> tuple[tuple[int, ...], tuple[int, ...]]: ...
    def walk(self, n: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]: ...
    def compute_checksum(self) -> int: ...
