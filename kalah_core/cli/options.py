"""What every ``kalah`` command shares: the rule options, reading a POSITION, printing the
text or the JSON document, and the exit statuses.

A command is a function ``cmd_<name>(args) -> int`` registered with :func:`add_command`, which
also gives it ``--json`` and the rule options. Inside it, :func:`rules_from_args` builds the
:class:`Rules`, :func:`position_from_arg` reads a POSITION (``start``, compact notation or
JSON) and :func:`emit` prints either the human text or the JSON document. The service's
commands (``kalah.commands`` entry points) use the same functions, from :mod:`kalah_core.cli`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TypeAlias

from ..errors import InvalidRulesError
from ..position import Position, parse_position
from ..rules import OPTION_DOCS, PRESETS, Rules

EXIT_OK = 0
EXIT_ERROR = 2
"""Exit status for bad input, the same as argparse's own usage errors."""
EXIT_INTERRUPTED = 130
"""Exit status of ``kalah solve`` stopped by Ctrl-C (128 + SIGINT, as a shell reports it);
it still prints what is proven so far."""

Command = Callable[[argparse.Namespace], int]
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The ``kalah`` subcommands, to which an entry point of ``kalah.commands`` adds its own."""

POSITION_HELP = (
    "'start', the compact notation (e.g. 444444-0-444444-0-s) or the JSON form "
    '(e.g. \'{"south": [4,4,4,4,4,4], "north": [4,4,4,4,4,4], "stores": [0,0], '
    '"to_move": "south"}\')'
)

# The options that override a preset, as (flag, rule option, argparse keywords).
_RULE_OPTIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("--houses", "houses", {"type": int, "metavar": "N"}),
    ("--seeds", "seeds", {"type": int, "metavar": "N"}),
    ("--capture", "capture", {"metavar": "nonempty|always"}),
    ("--end", "end", {"metavar": "either-side-empty|mover-empty"}),
    ("--remaining", "remaining", {"metavar": "owner|empty-side"}),
    ("--majority", "majority", {"action": argparse.BooleanOptionalAction}),
    ("--pie", "pie", {"action": argparse.BooleanOptionalAction}),
)


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Give a subcommand ``--json``, ``--rules PRESET`` and one override per rule option.

    Choices are checked by :class:`Rules`, not by argparse, so that a bad value is reported
    like every other engine error (and as JSON under ``--json``)."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    group = parser.add_argument_group("rules", "a preset, then overrides of single options")
    group.add_argument(
        "--rules",
        default="kalah",
        metavar="PRESET",
        help="one of " + ", ".join(PRESETS) + " (default kalah), or a JSON object of options",
    )
    for flag, option, kwargs in _RULE_OPTIONS:
        group.add_argument(flag, dest=option, default=None, help=OPTION_DOCS[option], **kwargs)


def add_command(
    commands: Commands,
    name: str,
    func: Command,
    help_text: str,
    *,
    position: bool = False,
) -> argparse.ArgumentParser:
    """Register the subcommand ``name`` run by ``func``, with the shared options and, with
    ``position``, a POSITION argument (read by :func:`rules_and_position`)."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    add_common_options(parser)
    parser.set_defaults(func=func)
    if position:
        parser.add_argument("position", metavar="POSITION", help=POSITION_HELP)
    return parser


def rules_from_args(args: argparse.Namespace) -> Rules:
    """The rules chosen by ``--rules`` and the per-option overrides."""
    text: str = args.rules
    base = (
        Rules.from_json(_json_object(text, "rules"))
        if text.lstrip().startswith("{")
        else Rules.preset(text)
    )
    overrides = {option: getattr(args, option) for _, option, _ in _RULE_OPTIONS}
    return base.replace(**{k: v for k, v in overrides.items() if v is not None})


def position_from_arg(text: str | None, rules: Rules) -> Position:
    """A POSITION argument (``start`` when omitted), checked against ``rules``."""
    return Position.start(rules) if text is None else parse_position(text, rules)


def rules_and_position(args: argparse.Namespace, text: str | None) -> tuple[Rules, Position]:
    """The rules of ``args``, and the POSITION ``text`` (``start`` when None) under them."""
    rules = rules_from_args(args)
    return rules, position_from_arg(text, rules)


def emit(args: argparse.Namespace, text: str, data: object) -> None:
    """Print ``data`` as JSON under ``--json``, else the human ``text``."""
    print(json.dumps(data) if args.json else text)


def _json_object(text: str, what: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidRulesError(what, text, f"a preset name or a JSON object ({error})") from None


def thread_count(text: str) -> int:
    """An argparse type: a count of search threads, 1..MAX_THREADS."""
    from ..solver import MAX_THREADS

    if not text.isdigit() or not 1 <= int(text) <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected 1..{MAX_THREADS} threads, got {text!r}")
    return int(text)
