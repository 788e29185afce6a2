"""The ``kalah`` command line: look at positions, list moves, replay games, solve.

The engine's commands live in this package, one module per command group: ``cmd_position``
(``show``, ``moves``, ``replay``), ``cmd_solve`` (``solve``, ``bench``), ``cmd_kgp``,
``cmd_egdb`` and ``cmd_book``; what they share (the rule options, reading a POSITION, the JSON
output, the exit statuses) is in :mod:`~kalah_core.cli.options`. Each group's module imports
the engine modules its commands need when one of them runs, so that a command pays at start-up
for its own imports only (``kalah solve`` without the book builders, the job store's executors
or the KGP agent).

Other packages add commands through the ``kalah.commands`` entry point group: each entry is
named after its command and points to a function ``add(commands)`` that adds the subcommand
(the service's, in :mod:`kalah_service.commands`), with the functions this package exports
below. This package never imports them by name; a command whose entry cannot be loaded (its
package's requirements are missing) is still listed and, when run, says in one line what to
install.

A :class:`~kalah_core.errors.KalahError` raised by a command becomes a one-line message on
stderr (and ``{"error": ..., "field": ...}`` on stdout with ``--json``) and exit status 2.

To add a command: write ``cmd_foo(args) -> int`` in its group's module, then in that module's
``add_commands`` ``parser = add_command(commands, "foo", cmd_foo, "one-line help")`` and add
its own arguments to ``parser``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from .. import __version__
from ..errors import KalahError
from ..rules import PRESET_DOCS
from . import cmd_book, cmd_egdb, cmd_kgp, cmd_position, cmd_prove, cmd_solve
from .options import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    POSITION_HELP,
    Command,
    Commands,
    add_command,
    emit,
    position_from_arg,
    rules_and_position,
    rules_from_args,
)

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "POSITION_HELP",
    "Command",
    "Commands",
    "add_command",
    "build_parser",
    "emit",
    "main",
    "position_from_arg",
    "rules_and_position",
    "rules_from_args",
]

GROUPS: dict[str, ModuleType] = {
    "show": cmd_position,
    "moves": cmd_position,
    "replay": cmd_position,
    "solve": cmd_solve,
    "bench": cmd_solve,
    "kgp": cmd_kgp,
    "egdb": cmd_egdb,
    "book": cmd_book,
    "prove": cmd_prove,
}
"""This package's commands and the modules that add them (each module's ``add_commands``)."""

BUILT_IN = frozenset(GROUPS)
"""This package's commands (``build_parser(plugins=False)``'s); the others are plugins."""

COMMANDS_GROUP = "kalah.commands"

RULES_DOC = "docs/rules.md"
"""The rules in the project's words (presets, options, the Finnish notation)."""


class _Version(argparse.Action):
    """``--version``, which names the engine's version: the solver loads only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from ..solver import ENGINE_VERSION

        print(f"kalah {__version__} (engine {ENGINE_VERSION})")
        parser.exit()


def build_parser(plugins: bool = True, only: str | None = None) -> argparse.ArgumentParser:
    """The ``kalah`` parser; each subcommand's function is in ``args.func``. Without
    ``plugins``, only this package's commands (``BUILT_IN``): no entry point is read. With
    ``only`` (one of them), only its group's commands: what running it needs."""
    parser = argparse.ArgumentParser(
        prog="kalah",
        description="Kalah engine: positions, moves and games under every rule set of the "
        f"project's rules ({RULES_DOC}).",
        epilog="presets: " + "; ".join(f"{name}: {doc}" for name, doc in PRESET_DOCS.items()),
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    commands = parser.add_subparsers(
        title="commands", dest="command", required=True, metavar="COMMAND"
    )
    groups = dict.fromkeys(GROUPS.values()) if only is None else [GROUPS[only]]
    for group in groups:
        group.add_commands(commands)
    if plugins:
        add_plugin_commands(commands)
    return parser


def add_plugin_commands(commands: Commands) -> None:
    """The commands of the ``kalah.commands`` entry points (the service's, when installed)."""
    from importlib import metadata  # scanning the installed packages costs a start-up

    for entry in metadata.entry_points(group=COMMANDS_GROUP):
        try:
            add = entry.load()
        except ImportError as error:
            add_unavailable_command(commands, entry.name, str(error))
        else:
            add(commands)


def add_unavailable_command(commands: Commands, name: str, reason: str) -> None:
    """A command whose package cannot load: it takes any arguments and prints ``reason``."""
    parser = commands.add_parser(name, help=f"(unavailable: {reason})", add_help=False)
    parser.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    parser.set_defaults(func=_unavailable(name, reason), unavailable=True)


def _unavailable(name: str, reason: str) -> Command:
    def run(args: argparse.Namespace) -> int:
        print(f"kalah {name}: {reason}", file=sys.stderr)
        return EXIT_ERROR

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kalah`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # A command of this package needs no plugin: reading the entry points (importlib.metadata
    # and the service's module) would add to every `kalah solve`'s start-up.
    # Nor the other groups' commands: every option built costs (argparse formats each one).
    command = next((a for a in argv if not a.startswith("-")), None)
    only = command if command in BUILT_IN else None
    parser = build_parser(plugins=only is None, only=only)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "unavailable", False):
        parser.error("unrecognized arguments: " + " ".join(unknown))
    func: Command = args.func
    try:
        return func(args)
    except KalahError as error:
        message = str(error).replace("\n", " ")
        if getattr(args, "json", False):
            print(json.dumps({"error": message, "field": error.field}))
        print(f"kalah {args.command}: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        # Ctrl-C: what the command keeps as it goes (a --checkpoint) is kept; no traceback.
        # (`kalah solve` handles it itself and prints what is proven so far.)
        print(f"kalah {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader stopped early (``kalah moves start | head -1``): leave without a
        # traceback, and without a second error when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
