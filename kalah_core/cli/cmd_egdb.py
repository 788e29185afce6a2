"""``kalah egdb build`` and ``kalah egdb info``: the endgame database."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Any

from .options import EXIT_ERROR, EXIT_OK, Commands, add_command, emit, rules_from_args


def add_commands(commands: Commands) -> None:
    """Register ``egdb`` and its subcommands."""
    egdb = commands.add_parser(
        "egdb",
        help="endgame database: build one, describe one",
        description="The endgame database: the exact value of every board with at most N "
        "seeds in houses (rules sharing houses, capture, end and remaining share one).",
    )
    egdb_commands = egdb.add_subparsers(
        title="commands", dest="egdb_command", required=True, metavar="COMMAND"
    )
    egdb_build = add_command(
        egdb_commands, "build", cmd_egdb_build, "build an endgame database (both cores)"
    )
    for action in egdb_build._actions:  # --seeds is the database's bound here
        if action.dest == "seeds":
            action.help = "N: the database holds every board with at most N seeds in houses"
            action.required = True
    egdb_build.add_argument(
        "--game-seeds",
        type=int,
        default=None,
        metavar="S",
        help="under majority: the seeds a house starts with, which set the game's total of "
        "seeds the database is for (default: the rules'; e.g. 6 for KGP's 6x6 board)",
    )
    egdb_build.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="default: a name with the rule key in the folder of KALAH_EGDB_PATH "
        "(auto: the cache folder, where every command finds it)",
    )
    egdb_build.add_argument(
        "--threads", type=int, default=None, metavar="T", help="default: every core"
    )
    egdb_build.add_argument(
        "--format",
        choices=("radix", "packed", "byte"),
        default=None,
        help="radix (default): format version 4, 17 boards a 64-bit word, 3.8-3.9 bits a "
        "board, under half the file and memory of byte; packed: 4 bits a board, version 3 "
        "(what engines before version 4 read); byte: one byte a board, version 2. Under "
        "majority rules only byte: version 5, a byte for each store the mover may hold",
    )
    egdb_build.add_argument("--quiet", action="store_true", help="no progress bar")
    egdb_build.add_argument(
        "--log", action="store_true", help="a line on stderr as each level is done"
    )
    egdb_build.add_argument(
        "--progress-file",
        action="store_true",
        help="also write the progress as JSON to OUT.progress (what a server reports)",
    )
    egdb_build.add_argument(  # the server's background builds: stop when it stops
        "--server-pid", type=int, default=None, help=argparse.SUPPRESS
    )
    egdb_info = egdb_commands.add_parser(
        "info", help="describe a database file", description="Describe a database file."
    )
    egdb_info.set_defaults(func=cmd_egdb_info)
    egdb_info.add_argument("path", metavar="PATH")
    egdb_info.add_argument("--json", action="store_true", help="print the result as JSON")
    egdb_info.add_argument(
        "--verify", action="store_true", help="check the entries against the header's checksum"
    )


def cmd_egdb_build(args: argparse.Namespace) -> int:
    """Build the endgame database of every board with at most --seeds seeds in houses."""
    from ..databases import build_dir
    from ..egdb import build, default_path

    max_seeds: int = args.seeds
    # --seeds is the database's bound here, not the start's seeds (which only a majority
    # database uses: they set the game's total).
    rules = rules_from_args(argparse.Namespace(**{**vars(args), "seeds": args.game_seeds}))
    path = args.output or default_path(rules, max_seeds, build_dir())
    if args.server_pid:
        _stop_with(args.server_pid)
    stats = build(
        path,
        rules,
        max_seeds,
        progress=not args.quiet,
        threads=args.threads,
        progress_file=args.progress_file,
        log=_log_line if args.log else None,
        format=args.format,
    )
    data = {
        "path": str(stats.path),
        "rules": str(stats.key),
        "max_seeds": stats.max_seeds,
        "entries": stats.entries,
        "bytes": stats.file_bytes,
        "bits": stats.bits,
        "bits_per_board": round(stats.bits_per_board, 4),
        "escapes": stats.escapes,
        "threads": stats.threads,
        "solve_seconds": round(stats.solve_seconds, 3),
        "write_seconds": round(stats.write_seconds, 3),
    }
    text = (
        f"{stats.path}: rules {stats.key}, at most {stats.max_seeds} seeds in houses, "
        f"{stats.entries:,} {'entries (boards x stores)' if stats.key.total else 'boards'}, "
        f"{stats.file_bytes:,} bytes "
        f"({stats.bits_per_board:.2f} bits a board); built in "
        f"{stats.solve_seconds:.1f} s on {stats.threads} thread(s), written in "
        f"{stats.write_seconds:.1f} s"
    )
    emit(args, text, data)
    return EXIT_OK


def _log_line(text: str) -> None:
    print(f"kalah egdb build: {text}", file=sys.stderr, flush=True)


SERVER_POLL_S = 1.0
"""How often a build started by a server checks that the server is still there."""


def _stop_with(server_pid: int) -> None:
    """End this process (a build started by a server) when the server process ends, however
    it ends: SIGTERM from the kernel when it is this process's parent (``PR_SET_PDEATHSIG``,
    Linux), and a thread that checks every SERVER_POLL_S that it still runs. SIGTERM becomes
    SystemExit, so the build cancels and removes its temporary files."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if server_pid == os.getppid() and sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

    def watch() -> None:
        while _process_alive(server_pid):
            time.sleep(SERVER_POLL_S)
        _log_line(f"the server (pid {server_pid}) is gone: stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    if not _process_alive(server_pid):  # gone before the watch began
        sys.exit(128 + signal.SIGTERM)
    threading.Thread(target=watch, name="server-watch", daemon=True).start()


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists


def cmd_egdb_info(args: argparse.Namespace) -> int:
    """Describe an endgame database file (and check its entries with --verify)."""
    from ..egdb import HEADER_SIZE, EndgameDatabase

    db = EndgameDatabase.open_any(args.path)
    data: dict[str, Any] = {
        "path": str(db.path),
        "format_version": db.header.version,
        "bits": db.header.bits,
        "bits_per_board": round(db.header.bits_per_board, 4),
        "escapes": db.header.escapes,
        "far_escapes": db.header.far,
        "bytes": HEADER_SIZE + db.header.body_bytes(),
        "houses": db.houses,
        "capture": db.key.capture,
        "end": db.key.end,
        "remaining": db.key.remaining,
        "rules": str(db.key),
        "max_seeds": db.max_seeds,
        "entries": db.entries,
        "checksum": f"{db.header.checksum:016x}",
    }
    lines = [f"{key}: {value}" for key, value in data.items()]
    if args.verify:
        data["verified"] = db.verify()
        lines.append("checksum " + ("verified" if data["verified"] else "MISMATCH: damaged file"))
    emit(args, "\n".join(lines), data)
    return EXIT_OK if data.get("verified", True) else EXIT_ERROR
