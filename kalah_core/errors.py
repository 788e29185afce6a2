"""The few exceptions the engine raises; shared by the compiled and the plain-Python code.

All are ``ValueError`` subclasses, so callers that only care about "bad input" catch one type.
Each carries the offending input in its message and, where it helps, a machine-readable field
(``option``, ``field``, ``move``) that the API turns into a problem+json body.
"""

from __future__ import annotations


class KalahError(ValueError):
    """Base class of every error the engine raises for bad input."""

    field: str | None = None


class InvalidRulesError(KalahError):
    """A rule option is unknown or has a value outside its allowed set."""

    def __init__(self, option: str, value: object, allowed: str) -> None:
        self.field = option
        self.option = option
        self.value = value
        self.allowed = allowed
        super().__init__(f"rule option {option!r}: {value!r} is not allowed; expected {allowed}")


class InvalidPositionError(KalahError):
    """A position is malformed or impossible (see ``Position.status``)."""

    def __init__(self, message: str, *, field: str = "position") -> None:
        self.field = field
        super().__init__(message)


class InvalidNotationError(KalahError):
    """A text in one of the notations (compact position, Finnish-notation game) cannot be parsed."""

    def __init__(self, message: str, *, text: str, field: str = "notation") -> None:
        self.field = field
        self.text = text
        super().__init__(f"{message}: {text!r}")


class IllegalMoveError(KalahError):
    """A move is not legal in the position it is played in."""

    def __init__(self, message: str, *, move: object, position: object) -> None:
        self.field = "move"
        self.move = move
        self.position = position
        self.reason = message
        super().__init__(f"illegal move {move!r} in {position}: {message}")
