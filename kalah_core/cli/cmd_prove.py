"""``kalah prove``: a position's exact value, or a bound on it, by tests on an executor."""

from __future__ import annotations

import argparse

from .cmd_book import _deep_databases, add_book_farm_options, add_book_search_options, test_run
from .options import EXIT_OK, Commands, add_command, emit, rules_and_position, thread_count


def add_commands(commands: Commands) -> None:
    """Register ``prove``."""
    prove = add_command(
        commands,
        "prove",
        cmd_prove,
        "prove a position's value (or a bound on it) by null-window tests on local processes "
        "or kalah workers",
        position=True,
    )
    bound = prove.add_mutually_exclusive_group()
    bound.add_argument("--at-least", type=int, default=None, metavar="T", help="prove value >= T")
    bound.add_argument("--at-most", type=int, default=None, metavar="T", help="prove value <= T")
    prove.add_argument(
        "--first-mnodes",
        type=float,
        default=1.0,
        metavar="M",
        help="millions of nodes of a test's first cap (it doubles each round)",
    )
    prove.add_argument(
        "--cold",
        action="store_true",
        help="each test on an emptied table (slower; every run then runs the same tests and "
        "writes the same checkpoint), not on the table its worker's last test left",
    )
    prove.add_argument(
        "--threads",
        type=thread_count,
        default=1,
        metavar="T",
        help="threads of each test, sharing its worker's table (at most the worker's cores; "
        "not with --cold): one local process with T threads is the way to use a machine's "
        "cores on one proof",
    )
    prove.add_argument(
        "--no-book", action="store_true", help="start from the position's moves, not the deep book"
    )
    add_book_search_options(
        prove, checkpoint="tests' outcomes so far, to resume from", minutes="stop after M minutes"
    )
    add_book_farm_options(
        prove,
        "run the tests on the kalah workers of this Redis (no URL: $KALAH_STATE_REDIS_URL, "
        "else $KALAH_REDIS_URL) instead of --workers local processes; --egdb paths must be "
        "the workers' paths",
    )


def cmd_prove(args: argparse.Namespace) -> int:
    """Prove the value of POSITION, or decide --at-least / --at-most."""
    from .. import deepbook
    from ..deepbook_refine import RefineBudget
    from ..prove import prove_position

    rules, position = rules_and_position(args, args.position)
    budget = RefineBudget(
        int(args.first_mnodes * 1_000_000),
        None,
        args.tt_mb,
        _deep_databases(args, rules),
        args.threads,
    )
    section = None if args.no_book else deepbook.shipped().sections.get(rules.key)
    proof = prove_position(
        rules,
        position,
        budget,
        section=section,
        at_least=args.at_least,
        at_most=args.at_most,
        warm=not args.cold,
        **test_run(args),
    )
    if args.at_least is not None:
        claim = f"value >= {args.at_least:+d}"
    elif args.at_most is not None:
        claim = f"value <= {args.at_most:+d}"
    else:
        claim = "the exact value"
    verdict = {True: "proven", False: "disproven", None: "open (out of time)"}[proof.holds]
    found = (
        f"value {proof.lower:+d} (exact)"
        if proof.exact
        else f"proven between {proof.lower:+d} and {proof.upper:+d}"
    )
    text = (
        f"{position.compact()}: {found}; {claim}: {verdict}\n"
        f"{proof.nodes:,} nodes in {proof.tests:,} tests ({proof.searched:,} searched now), "
        f"{proof.seconds:.1f} s{', from the deep book' if proof.book else ''}"
    )
    result: dict[str, object] = (
        {"value": proof.lower, "exact": True}
        if proof.exact
        else {"lower": proof.lower, "upper": proof.upper, "exact": False}
    )
    data = {
        **result,
        "position": position.compact(),
        "rules": rules.to_json(),
        "claim": {"at_least": args.at_least, "at_most": args.at_most, "holds": proof.holds},
        "tests": proof.tests,
        "nodes": proof.nodes,
        "searched": proof.searched,
        "seconds": proof.seconds,
        "deep_book": proof.book,
        "databases": list(budget.databases),
    }
    emit(args, text, data)
    return EXIT_OK
