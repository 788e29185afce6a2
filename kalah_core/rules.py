"""Rule options and the named presets of docs/rules.md.

A :class:`Rules` is an immutable value; presets are plain instances, and ``Rules.preset(name,
**overrides)`` builds a variant. ``to_json()`` is the normalized form used in cache keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .errors import InvalidRulesError

Capture = Literal["nonempty", "always"]
End = Literal["either-side-empty", "mover-empty"]
Remaining = Literal["owner", "empty-side"]

MAX_HOUSES = 12
"""The most houses a side may have (KGP tournaments play up to 12x12)."""
MAX_START_SEEDS = 24
"""The most seeds a house may start with: 2 x MAX_HOUSES x MAX_START_SEEDS = 576 seeds fit the
engine's 600 (``position.MAX_SEEDS``)."""

OPTION_DOCS: dict[str, str] = {
    "houses": f"houses per side, 1..{MAX_HOUSES}",
    "seeds": f"seeds in every house at the start, 1..{MAX_START_SEEDS}",
    "capture": "'nonempty': a last seed in an own empty house captures only if the facing house "
    "holds seeds; 'always': it goes to the store even when the facing house is empty",
    "end": "'either-side-empty': the game ends as soon as either side's houses are all empty; "
    "'mover-empty': when the player to move has no seed in any house",
    "remaining": "'owner': seeds left in houses at the end go to their owner's store; "
    "'empty-side': the player whose houses are empty takes the seeds left on the other side",
    "majority": "the game also ends as soon as a store holds more than half of all seeds",
    "pie": "North may answer 'swap' at its first turn instead of sowing",
}


@dataclass(frozen=True, slots=True)
class Rules:
    """Every option of docs/rules.md; defaults are the standard ``kalah`` preset."""

    houses: int = 6
    seeds: int = 4
    capture: Capture = "nonempty"
    end: End = "either-side-empty"
    remaining: Remaining = "owner"
    majority: bool = False
    pie: bool = False

    def __post_init__(self) -> None:
        for option, (low, high) in OPTION_RANGES.items():
            _check_int(option, getattr(self, option), low, high)
        for option, allowed in OPTION_CHOICES.items():
            _check_choice(option, getattr(self, option), allowed)
        for option in OPTION_FLAGS:
            _check_bool(option, getattr(self, option))

    @classmethod
    def preset(cls, name: str = "kalah", /, **overrides: Any) -> Rules:
        """The preset ``name`` with some options overridden."""
        try:
            base = PRESETS[name]
        except KeyError:
            raise InvalidRulesError("preset", name, "one of " + ", ".join(PRESETS)) from None
        return base.replace(**overrides) if overrides else base

    def replace(self, **overrides: Any) -> Rules:
        """A copy with some options changed; unknown option names are an error."""
        for option in overrides:
            if option not in OPTION_DOCS:
                raise InvalidRulesError(
                    option, overrides[option], "a rule option: " + ", ".join(OPTION_DOCS)
                )
        return dataclasses.replace(self, **overrides)

    @classmethod
    def from_json(cls, data: object) -> Rules:
        """Rules from the API form: a preset name, or ``{"preset": name, <option>: value, ...}``."""
        if data is None:
            return PRESETS["kalah"]
        if isinstance(data, str):
            return cls.preset(data)
        if isinstance(data, Mapping):
            options = dict(data)
            name = options.pop("preset", "kalah")
            if not isinstance(name, str):
                raise InvalidRulesError("preset", name, "a preset name")
            return cls.preset(name, **options)
        raise InvalidRulesError("rules", data, "a preset name or an object of options")

    def to_json(self) -> dict[str, Any]:
        """Every option, normalized: the same rules always give the same dict."""
        return dataclasses.asdict(self)

    @property
    def preset_name(self) -> str | None:
        """The name of the preset these rules equal, if any."""
        return next((name for name, rules in PRESETS.items() if rules == self), None)

    @property
    def key(self) -> str:
        """A short canonical text of every option, for cache keys."""
        return (
            f"h{self.houses}s{self.seeds}{self.capture[0]}"
            f"{'e' if self.end == 'either-side-empty' else 'm'}"
            f"{self.remaining[0]}{int(self.majority)}{int(self.pie)}"
        )

    @property
    def total_seeds(self) -> int:
        """Seeds on the board at the start."""
        return 2 * self.houses * self.seeds

    @property
    def stores_matter(self) -> bool:
        """Whether the future depends on the stores (only the ``majority`` option makes it so)."""
        return self.majority


OPTION_RANGES: dict[str, tuple[int, int]] = {
    "houses": (1, MAX_HOUSES),
    "seeds": (1, MAX_START_SEEDS),
}
"""The integer options: their smallest and largest values."""

OPTION_CHOICES: dict[str, tuple[str, ...]] = {
    "capture": get_args(Capture),
    "end": get_args(End),
    "remaining": get_args(Remaining),
}
"""The options that name a choice: their allowed values (from the ``Literal`` types)."""

OPTION_FLAGS: tuple[str, ...] = ("majority", "pie")
"""The options that are true or false."""


def option_values(option: str) -> list[Any]:
    """The allowed values of ``option`` as ``GET /v1/rules`` lists them: an integer option's
    minimum and maximum, a choice's names, a flag's ``[False, True]``."""
    if option in OPTION_RANGES:
        return list(OPTION_RANGES[option])
    if option in OPTION_CHOICES:
        return list(OPTION_CHOICES[option])
    if option in OPTION_FLAGS:
        return [False, True]
    raise KeyError(option)


def _check_int(option: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRulesError(option, value, f"an integer {low}..{high}")


def _check_choice(option: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidRulesError(option, value, "one of " + ", ".join(repr(a) for a in allowed))


def _check_bool(option: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidRulesError(option, value, "true or false")


PRESETS: dict[str, Rules] = {
    "kalah": Rules(),
    "kalaha": Rules(seeds=3, end="mover-empty"),
    "kalah-ru": Rules(seeds=6, end="mover-empty", remaining="empty-side", majority=True),
    "piet-hein": Rules(seeds=6, capture="always"),
    "kalah-pie": Rules(pie=True),
    "kgp": Rules(houses=8, seeds=8, majority=True),
}

PRESET_DOCS: dict[str, str] = {
    "kalah": "Kalah, the standard rules (4 seeds): the rules of the published solutions",
    "kalaha": "Finnish kalaha, 3 seeds: the game ends when the player to move has no seed",
    "kalah-ru": "Russian kalah, 6 seeds: the game ends when the player to move has no seed "
    "or a store holds more than half of them; an empty row takes the rest",
    "piet-hein": "Piet Hein's rules, 6 seeds: a last seed in an empty house is always stored",
    "kalah-pie": "Kalah with the pie rule: North may swap places after South's first move",
    "kgp": "Kalah as Kalah Game Protocol (KGP) tournament servers play it, 8x8 by default "
    "(their boards run 6x6 to 12x12): standard rules, and a store with more than half the "
    "seeds ends the game",
}
"""Each preset in a player's words (help, ``GET /v1/rules``, the board page); docs/RULES.md
says which rule text each follows."""
