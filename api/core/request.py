"""An analysis request, parsed once: the position, the rules and the effective limits.

Every way in builds the same :class:`AnalysisRequest` — a JSON body (``POST /v1/analysis``),
a query string (``GET``), a batch item (over the batch's shared rules and limits), a game
review's positions and the command line — and its :attr:`~AnalysisRequest.key` is the cache
key, the batch's de-duplication key and the job queue's task identity. Errors name the
offending field as the client spelled it (``rules.houses``, ``limits.time_ms``,
``positions.3.position``...).

This module is the service's only validator of positions, rules and limits (the request
schemas check JSON types only, and document the bounds checked here): :func:`parse_position_field`,
:func:`parse_rules`, :func:`parse_query_rules` and :meth:`Limits.checked` are what every
resource (analysis, board, play, games, batch) and the command line call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from kalah_core.errors import KalahError
from kalah_core.game import Move, legal_moves
from kalah_core.position import Position, parse_position
from kalah_core.rules import OPTION_DOCS, Rules

from ..base.config import MAX_DEPTH, Settings
from .problems import ApiProblem

MAX_POSITION_TEXT = 1024
"""Longest position text accepted (the compact notation is at most 64 characters; the rest is
room for the JSON form sent as text)."""

MAX_PRESET_TEXT = 64
"""Longest preset name accepted (every preset's name is far shorter)."""

RULE_PARAMETERS = tuple(OPTION_DOCS)
"""The rule options, each also a query parameter (``&houses=4``) overriding the preset's."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The effective limits of a search: the client's, defaulted, checked against the server's."""

    time_ms: int
    depth: int | None = None
    nodes: int | None = None

    def text(self) -> str:
        """The canonical spelling inside keys (``t1000``, ``t500d4``, ``t1000n20000``)."""
        return (
            f"t{self.time_ms}"
            + (f"d{self.depth}" if self.depth else "")
            + (f"n{self.nodes}" if self.nodes else "")
        )

    def to_json(self) -> dict[str, int | None]:
        return {"time_ms": self.time_ms, "depth": self.depth, "nodes": self.nodes}

    @classmethod
    def checked(
        cls, settings: Settings, given: Mapping[str, Any] | None, *, prefix: str = ""
    ) -> Limits:
        """The limits a search runs with. A budget above the server's maximum is a 422
        naming the field (``limits.time_ms`` in a body, ``time_ms`` in a query) and the
        maximum; a missing ``time_ms`` is the server's default."""
        given = given or {}
        for name, maximum in (
            ("time_ms", settings.max_time_ms),
            ("depth", MAX_DEPTH),
            ("nodes", settings.max_nodes),
        ):
            value = given.get(name)
            if value is not None and value > maximum:
                raise ApiProblem(
                    "limit-exceeded",
                    f"{name} {value} is above the server's maximum of {maximum}",
                    field=prefix + name,
                    max=maximum,
                )
            if value is not None and value < 1:
                raise ApiProblem(
                    "invalid-request", f"{name} must be at least 1", field=prefix + name
                )
        time_ms = given.get("time_ms")
        return cls(
            settings.default_time_ms if time_ms is None else time_ms,
            given.get("depth"),
            given.get("nodes"),
        )


class RequestJson(TypedDict):
    """An :class:`AnalysisRequest` as JSON (:meth:`AnalysisRequest.to_json`): the job queue's
    form, already checked."""

    rules: dict[str, Any]
    position: str
    limits: dict[str, Any]  # Limits.to_json(): time_ms an int, depth and nodes an int or None
    moves: NotRequired[list[Move]]


@dataclass(frozen=True, slots=True)
class AnalysisRequest:
    """What one analysis is asked for; equal requests have equal keys and equal answers."""

    position: Position
    rules: Rules
    limits: Limits
    moves: tuple[Move, ...] | None = None
    """Only these root moves (``moves=``, as chess engines' ``searchmoves``), in house order;
    None: every legal move."""

    @property
    def key(self) -> str:
        """``<rules key>:<compact position>:<limits>``: the cache key of the answer to this
        request (under the engine version), and what a batch de-duplicates on."""
        return f"{self.exact_key}:{self.limits.text()}"

    @property
    def exact_key(self) -> str:
        """``<rules key>:<compact position>``: a proven answer does not depend on the limits,
        so it is cached under this key and answers the request with any limits (a request
        for some moves only adds ``:m<moves>``)."""
        key = f"{self.rules.key}:{self.position.compact()}"
        if self.moves is not None:
            key += ":m" + ",".join(str(move) for move in self.moves)
        return key

    # -- parsing ---------------------------------------------------------------------------

    @classmethod
    def from_body(
        cls,
        settings: Settings,
        body: Mapping[str, Any],
        *,
        shared_rules: Rules | None = None,
        shared_limits: Mapping[str, Any] | None = None,
        where: str = "",
    ) -> AnalysisRequest:
        """From a JSON object ``{"position", "rules", "limits"}``: a ``POST`` body, or a batch
        item (``where`` is ``positions.<i>.``) whose own rules replace ``shared_rules`` and
        whose own limits override ``shared_limits``."""
        rules = (
            parse_rules(body.get("rules"), field=where + "rules")
            if shared_rules is None or "rules" in body
            else shared_rules
        )
        position = parse_position_field(body["position"], rules, field=where + "position")
        merged = {**(shared_limits or {}), **(body.get("limits") or {})}
        limits = Limits.checked(settings, merged, prefix=where + "limits.")
        moves = body.get("moves")
        if moves is None:
            return cls(position, rules, limits)
        return cls(position, rules, limits, parse_search_moves(moves, position, rules, where))

    @classmethod
    def from_query(cls, settings: Settings, args: Mapping[str, Any]) -> AnalysisRequest:
        """From ``GET`` parameters: ``rules=<preset>`` plus one parameter per overridden
        option (``&houses=4``), ``position``, and the limits as plain parameters."""
        overrides = {name: args[name] for name in RULE_PARAMETERS if name in args}
        rules = parse_query_rules(args.get("rules"), overrides)
        position = parse_position_field(args["position"], rules)
        limits = Limits.checked(settings, args)
        if args.get("moves") is None:
            return cls(position, rules, limits)
        given: list[object] = [
            int(m) if m.strip().isdigit() else m.strip() for m in str(args["moves"]).split(",")
        ]
        moves = parse_search_moves(given, position, rules, "", indexed=False)
        return cls(position, rules, limits, moves)

    @classmethod
    def of(
        cls, settings: Settings, position: Position, rules: Rules, limits: Mapping[str, Any]
    ) -> AnalysisRequest:
        """From a position and rules already parsed (the command line): only the limits are
        checked, named ``limits.<name>`` as in a body."""
        return cls(position, rules, Limits.checked(settings, limits, prefix="limits."))

    # -- the job queue's form (already checked: no limits are re-applied) -------------------

    def to_json(self) -> RequestJson:
        data: RequestJson = {
            "rules": self.rules.to_json(),
            "position": self.position.compact(),
            "limits": self.limits.to_json(),
        }
        if self.moves is not None:
            data["moves"] = list(self.moves)
        return data

    @classmethod
    def from_json(cls, data: RequestJson) -> AnalysisRequest:
        limits = data["limits"]
        moves = data.get("moves")
        return cls(
            Position.parse(data["position"]),
            Rules.from_json(data["rules"]),
            Limits(limits["time_ms"], limits.get("depth"), limits.get("nodes")),
            None if moves is None else tuple(moves),
        )


def parse_search_moves(
    given: object, position: Position, rules: Rules, where: str, *, indexed: bool = True
) -> tuple[Move, ...]:
    """The root moves an analysis is restricted to: a non-empty list of legal moves of
    ``position`` (house numbers or ``swap``), in house order without repeats; a 422 naming
    ``moves`` (a body's ``moves.<i>``) otherwise."""
    if not isinstance(given, list) or not given:
        raise ApiProblem(
            "invalid-request",
            "moves is a non-empty list of moves (house numbers or swap)",
            field=where + "moves",
        )
    legal = legal_moves(position, rules)
    for i, move in enumerate(given):
        if move not in legal or isinstance(move, bool):
            name = f"{where}moves.{i}" if indexed else f"{where}moves"
            raise ApiProblem(
                "illegal-move",
                f"{move!r} is not a legal move of this position (legal: "
                + ", ".join(str(m) for m in legal)
                + ")",
                field=name,
            )
    return tuple(m for m in legal if m in given)


def parse_rules(value: object, *, field: str = "rules") -> Rules:
    """Rules from a preset name or an object of options; errors name ``rules[.<option>]``."""

    def rename(name: str | None) -> str:
        if name in (None, "rules") or (name == "preset" and not isinstance(value, Mapping)):
            return field
        return f"{field}.{name}"

    if (isinstance(value, str) and len(value) > MAX_PRESET_TEXT) or (
        isinstance(value, Mapping) and len(value) > len(OPTION_DOCS) + 1
    ):
        raise ApiProblem(
            "invalid-request", "Rules are a preset name or an object of options.", field=field
        )
    try:
        return Rules.from_json(value)
    except KalahError as error:  # named as the client spelled it (only errors pay for it)
        error.field = rename(error.field)
        raise


def parse_query_rules(preset: str | None, overrides: Mapping[str, Any]) -> Rules:
    """Rules from query parameters: ``rules=<preset>`` plus one parameter per overridden option."""

    def rename(name: str | None) -> str:
        return "rules" if name in (None, "rules", "preset") else str(name)

    if preset == "":  # "?rules=" names no preset: refused like any other that is not one
        raise ApiProblem(
            "invalid-rules",
            "rules is empty: name a preset (GET /v1/rules lists them) or leave it out for kalah",
            field="rules",
        )
    try:
        return Rules.preset(preset or "kalah", **overrides)
    except KalahError as error:  # named as the client spelled it (only errors pay for it)
        error.field = rename(error.field)
        raise


def parse_position_field(value: object, rules: Rules, *, field: str = "position") -> Position:
    """A position (``start``, compact notation or JSON form); errors name ``field[.<part>]``."""

    def rename(name: str | None) -> str:
        if not name or name in ("position", "notation"):
            return field
        return (
            field + name[len("position") :] if name.startswith("position.") else f"{field}.{name}"
        )

    if isinstance(value, str) and len(value) > MAX_POSITION_TEXT:
        raise ApiProblem(
            "invalid-request",
            f"A position text is at most {MAX_POSITION_TEXT} characters.",
            field=field,
        )
    try:
        return parse_position(value, rules)
    except KalahError as error:  # named as the client spelled it (only errors pay for it)
        error.field = rename(error.field)
        raise
