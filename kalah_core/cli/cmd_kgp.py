"""``kalah kgp``: play freeplay games on a Kalah Game Protocol server (docs/kgp.md).

The agent and the protocol load when the command runs (sockets, threads, the engine)."""

from __future__ import annotations

import argparse
import signal

from ..errors import InvalidRulesError
from .options import EXIT_OK, Commands, emit


def add_commands(commands: Commands) -> None:
    """Register ``kgp``."""
    kgp = commands.add_parser(
        "kgp",
        help="play on a Kalah Game Protocol server (go-kgp)",
        description="Play freeplay games on a KGP server as an agent, then print a summary. "
        "See docs/kgp.md.",
    )
    kgp.set_defaults(func=cmd_kgp)
    kgp.add_argument(
        "server", metavar="SERVER", help="tcp://HOST:PORT, ws://HOST:PORT/socket or wss://..."
    )
    kgp.add_argument(
        "--games",
        type=int,
        default=None,
        metavar="N",
        help="stop after N games (default: until the server closes)",
    )
    kgp.add_argument("--name", default="kalah-core", help="the name the server shows (info:name)")
    kgp.add_argument("--token", default=None, help="auth:token: one identity across connections")
    kgp.add_argument(
        "--time-per-move",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="thinking time per state, a little under the server's limit (default 1.0)",
    )
    kgp.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="search threads (default: the cores this process may use)",
    )
    kgp.add_argument(
        "--tt-mb",
        type=int,
        default=None,
        metavar="MB",
        help="transposition table (default: a quarter of the memory limit, 16..1024)",
    )
    kgp.add_argument(
        "--opponent-may-err",
        action="store_true",
        help="when losing, play among moves close to the best estimate the one a shallower "
        "opponent is likelier to answer badly (off by default: no measured gain)",
    )
    kgp.add_argument(
        "--no-memory",
        action="store_true",
        help="choose moves by search alone (by default, where the agent moved before, the "
        "results of those games count too)",
    )
    kgp.add_argument("--json", action="store_true", help="print the summary as JSON")


def cmd_kgp(args: argparse.Namespace) -> int:
    """Play freeplay games on a KGP server, then print a summary (docs/kgp.md)."""
    import logging

    from ..kgp.agent import Agent, AgentOptions, make_engine
    from ..kgp.limits import cpu_limit, default_tt_mb
    from ..kgp.protocol import check_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = AgentOptions(
        server=check_server(args.server),
        games=args.games,
        name=args.name,
        token=args.token,
        time_per_move=args.time_per_move,
        threads=args.threads or cpu_limit(),
        tt_mb=args.tt_mb or default_tt_mb(),
        opponent_may_err=args.opponent_may_err,
        memory=not args.no_memory,
    )
    if options.games is not None and options.games < 1:
        raise InvalidRulesError("games", options.games, "a positive number of games")
    if not 0.05 <= options.time_per_move <= 3600:
        raise InvalidRulesError("time-per-move", options.time_per_move, "0.05..3600 seconds")
    engine, result_db = make_engine(options)
    agent = Agent(options, engine, result_db)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: agent.stop())
    summary = agent.run()
    mean = summary.mean_margin
    emit(
        args,
        summary.text(),
        {
            "games": summary.games,
            "wins": summary.wins,
            "draws": summary.draws,
            "losses": summary.losses,
            "unknown": summary.unknown,
            "mean_margin": None if mean is None else round(mean, 3),
            "records": [
                {
                    "number": r.number,
                    "houses": r.rules.houses,
                    "seeds": r.rules.seeds,
                    "side": "south" if r.we_south else "north",
                    "result": r.result,
                    "margin": r.margin,
                    "game": r.notation(),
                }
                for r in agent.records
            ],
        },
    )
    return EXIT_OK
