"""docs/config.md, generated from the settings table (:mod:`kalah_service.base.config`).

    .venv/bin/python -m kalah_service.ops.config_docs > docs/config.md

A test (tests/service/test_docs.py) fails when docs/config.md differs from what this prints,
so a new setting needs a line in :data:`MEANINGS` (and, where its default is not a plain
value, in :data:`DEFAULT_TEXT`) before the suite passes.
"""

# ruff: noqa: RUF001  (the documentation's typography: en dashes, minus and multiplication signs)

from __future__ import annotations

import textwrap

from ..base import config
from ..base.config import ENV_NAMES

DEFAULT_TEXT: dict[str, str] = {
    "KALAH_REDIS_URL": "unset",
    "KALAH_STATE_REDIS_URL": "`KALAH_REDIS_URL`",
    "KALAH_EGDB_PATH": "`auto`",
    "KALAH_EGDB_SEEDS": "`auto`",
    "KALAH_WORKERS": "CPUs available",
    "KALAH_CACHE_DIR": "`<cache folder>/answers`",
}
"""The documented default of a setting whose default in the table is computed (None)."""

MEANINGS: dict[str, str] = {
    "KALAH_REDIS_URL": (
        "Redis for the shared answer cache and its per-key locks, e.g. "
        "`redis://localhost:6379/0`; a cache, so it may evict (`allkeys-lru`) and need not "
        "persist. Unset: the embedded store (`KALAH_CACHE_DIR`), shared by every process of the "
        "machine (the embedded default; nothing else to run)."
    ),
    "KALAH_STATE_REDIS_URL": (
        "The state store: Redis for what users rely on — API keys, batch jobs and their queue, "
        "rate-limit counters. It must never evict: the API and `kalah worker` refuse to start "
        "unless its `maxmemory-policy` is `noeviction` (a full store then refuses new jobs with a "
        "503 instead of dropping keys), and it should persist (`appendonly yes`; a warning at "
        "start if it does not). Give it a Redis of its own when the cache's evicts."
    ),
    "KALAH_TT_MB": ("Size of each worker's transposition table, in MiB."),
    "KALAH_SEARCH_THREADS": (
        "Threads of each search (one proof on several cores; gunicorn already runs a worker per "
        "core)."
    ),
    "KALAH_DEFAULT_TIME_MS": ("Search budget of a request that gives none."),
    "KALAH_MAX_TIME_MS": (
        "Largest search budget a request may ask for; above it the answer is a 422 naming "
        "`limits.time_ms` (or `time_ms`) and this maximum. The gunicorn worker timeout is 3 × "
        "this + 30 s."
    ),
    "KALAH_MAX_NODES": ("Largest node budget a request may ask for."),
    "KALAH_STREAM_MAX_TIME_MS": (
        "Largest search budget of a live analysis (`/v1/analysis` asked for `text/event-stream` "
        "or `application/x-ndjson`, see [api.md](api.md)): longer than a one-shot's, since its "
        "caller watches it deepen and may stop it at any time; above it the answer is a 422 "
        "naming `time_ms`. A stream holds an engine only while it runs, is charged the time it "
        "ran, and ends when its client goes away. gunicorn's `gthread` workers keep answering "
        "their heartbeat while a stream runs, so the worker timeout does not cut it."
    ),
    "KALAH_STREAM_HEARTBEAT_MS": (
        "How long a live analysis stays silent before it sends a heartbeat (an SSE comment "
        "line, a blank NDJSON line), so that proxies keep a quiet stream open (nginx closes an "
        "upstream silent for 60 s)."
    ),
    "KALAH_EGDB_PATH": (
        "Where the server and every command (`kalah solve`, `analyse`, `batch`, `egdb build`) "
        "find endgame databases: `auto` (the cache folder, `$XDG_CACHE_HOME/kalah`, i.e. "
        "`~/.cache/kalah`), a folder of `*.egdb` files, a file (several separated by `:`), or "
        "`off`. The largest database of each rule key is probed. In `auto` the server also "
        "builds, in the background and once per machine, every preset's missing database "
        "(`kalah`/`kalah-pie`, `kalaha`, `piet-hein`, and `kalah-ru`'s under `majority` at "
        "16 seeds at most), "
        "most used first, and attaches each when ready; answers are the same without them, only "
        "slower; readiness does not wait. `GET /v1/rules` reports them (`databases`)."
    ),
    "KALAH_EGDB_SEEDS": (
        "Size of the background builds of `auto`: every board with at most this many seeds in "
        "houses. `auto`: the most used rule key (`kalah`/`kalah-pie`) gets the largest of 28, 26, "
        "24, … seeds whose build fits in half the physical memory (a build holds its dense "
        "levels and its last level's bytes) and takes at most 5 minutes on the idle cores (70 "
        "CPU-seconds per 10⁹ boards), with every file in half the free disk, the others 26 "
        "seeds: on a machine with 8 GB or more and 2 cores 28 + 26 + 26 seeds, 5.7 GB; with "
        "one core 26 seeds for every key, 4.2 GB. Files are in the radix format, under 4 bits a "
        "board at 24 seeds (format 4; formats 2, one byte a board, and 3, 4 bits, are still "
        "read). `GET /v1/rules` shows each build's `progress` and `eta_s` (see "
        "[databases.md](databases.md)). 28 seeds is 2.9 GB in the radix format (planned with "
        "10 % of the boards escaped; 5.6 GB in bytes), 5–6 minutes on 2 idle cores, 3.7 GB of "
        "memory while it builds, and proves every move of a position 6 sowings deep with 5.9 "
        "times fewer nodes than 24 seeds (mean of 30 positions: 0.67 M against 3.98 M); 26 "
        "seeds is 1.4 GB. A number: every key at that size (up to 32). `0`: build none."
    ),
    "KALAH_WORKERS": ("gunicorn worker processes (`kalah serve --workers` overrides)."),
    "KALAH_THREADS": (
        "Threads per gunicorn worker (`gthread`): cached answers and health checks are served "
        "while searches run."
    ),
    "KALAH_ENGINES": (
        "Engines per gunicorn worker: searches that run at once (the search runs without the "
        "GIL), each engine with its own `KALAH_TT_MB` table, made when first needed. Long "
        "searches (budget above `KALAH_DEFAULT_TIME_MS`) use all but one, which is kept for short "
        "ones. A search that would wait for an engine longer than its own budget is a `503` "
        "problem (`busy`) with `Retry-After` at once; engines leave two threads free and waiting "
        "searches one (`KALAH_THREADS` − 1 in all), so `/livez`, `/readyz` and cached answers "
        "always find a thread."
    ),
    "KALAH_LONG_NICE": (
        "How much lower the CPU priority (`nice`) of long searches (budget above "
        "`KALAH_DEFAULT_TIME_MS`) is than the rest of the worker: they run on threads of their "
        "own at this nice value, so on busy cores a short search, `/livez` and `/readyz` get the "
        "CPU first. `0`: the same priority."
    ),
    "KALAH_CACHE_TTL_S": (
        "Lifetime of cached heuristic (inexact) answers; exact answers never expire."
    ),
    "KALAH_LRU_SIZE": (
        "Entries of each process's in-memory LRU of exact answers, in front of the shared store "
        "(embedded or Redis)."
    ),
    "KALAH_CACHE_DIR": (
        "The embedded answer store (SQLite through `diskcache`), shared by every process of the "
        "machine, beside the databases; batch jobs without Redis live next to it "
        "(`answers-jobs`). Exact answers survive a restart."
    ),
    "KALAH_CACHE_MB": (
        "Size bound of the embedded answer store on disk, its SQLite write-ahead log included "
        "(the log gets a quarter, at most 16 MiB, and is checkpointed and emptied whenever it "
        "passes half of that: `api/stores/walbound.py`); the oldest stored answers are evicted "
        "first."
    ),
    "KALAH_BATCH_MAX_POSITIONS": (
        "Most positions in one `POST /v1/batch` (422 naming `positions` above)."
    ),
    "KALAH_BATCH_INLINE_MAX": (
        "A batch of at most this many positions whose budgets add up to at most "
        "`KALAH_MAX_TIME_MS` is answered inline (200); a larger one becomes a job (202) run by "
        "`kalah worker` processes with Redis, or by the server's own processes without it "
        "(results in the embedded store)."
    ),
    "KALAH_BATCH_MAX_BUDGET_MS": (
        "Most search time one batch may ask for in all (the sum of the distinct items' `time_ms`; "
        "422 naming `limits.time_ms` above)."
    ),
    "KALAH_BATCH_CHUNK": (
        "Distinct positions per chunk: the unit a worker leases, computes and stores at once (and "
        "that is retried elsewhere if its worker dies)."
    ),
    "KALAH_JOB_TTL_S": (
        "How long a job's status and results stay in the state store after its last change "
        "(without one, in the embedded job store after its creation)."
    ),
    "KALAH_REDIS_TIMEOUT_S": (
        "Redis connect and socket timeout. A failed Redis call is a cache miss: the request is "
        "computed and answered, and Redis is tried again after 0.5 s."
    ),
    "KALAH_LIMITS": (
        "Who is rate-limited: `auto` limits every caller except one that connects from a "
        "loopback address, with no `X-Forwarded-For` or `Forwarded` header, to a server "
        "without a state store (the README's first command on a person's own machine; a local "
        "relay that adds no header, such as socat or `ssh -L`, looks the same, so exposing "
        "the port needs `--behind-proxy` or `on`); `on` limits everyone (`deploy/` sets it; "
        "`kalah serve --behind-proxy` makes `auto` `on`); `off` limits no one. `kalah serve` "
        "prints who is exempt at start; `GET /v1/rules` says which applies "
        "(`rate_limits.applies`). See docs/limits.md."
    ),
    "KALAH_LIMIT_ANONYMOUS": (
        "Rate limit of callers without an API key, per client IP, in cost units (see "
        "[api.md](api.md#limits)); any rate in the `limits` library's syntax, several "
        "separated by `;` (e.g. `20/second;120/minute`)."
    ),
    "KALAH_LIMIT_STANDARD": "Rate limit of each `standard` API key.",
    "KALAH_LIMIT_PREMIUM": "Rate limit of each `premium` API key.",
    "KALAH_TRUSTED_PROXIES": (
        "Proxy hops in front of the service: the client is the address this many hops back "
        "in `X-Forwarded-For` or `Forwarded` (RFC 7239 `for=`), read alike; where a request "
        "carries both and they differ at that hop, neither is trusted (0: use the peer "
        "address). Unset, `kalah serve --behind-proxy` trusts 1."
    ),
    "KALAH_CORS_ORIGINS": (
        "Origins allowed to call the public endpoints from a browser, comma-separated."
    ),
    "KALAH_METRICS_ALLOW": (
        "Who may read `/metrics`: comma-separated addresses or networks (`*`: anyone); others "
        "get a 403 problem. Every address a request came through must be inside: the peer, "
        "each `X-Forwarded-For` entry and each `Forwarded` `for=`. `deploy/k8s/api.yaml` "
        "allows the cluster's private networks (Prometheus scrapes port 8000 directly); the "
        "shipped nginx answers `/metrics` with a 404."
    ),
}
"""What each variable of the settings table means, in the table's order."""

HEADER = """\
# Configuration of the API server

<!-- Generated by `.venv/bin/python -m kalah_service.ops.config_docs > docs/config.md` from the
settings table in api/base/config.py and api/ops/config_docs.py: edit those, not this file. -->

Every setting is an environment variable, read in one place (`api/base/config.py`) when the
app starts; a bad value stops the server with a message naming the variable.
"""

GUNICORN_ONLY = """\
Used by `api/ops/gunicorn_conf.py` only: `KALAH_BIND` (default `127.0.0.1:8000`; `-b` and
`kalah serve --host/--port` override it), `KALAH_LOG_LEVEL` (default `info`),
`KALAH_MAX_REQUESTS` (default `20000`: a worker is recycled after that many requests, `0`
never) with `KALAH_MAX_REQUESTS_JITTER` (default a tenth of it, so workers do not restart
together), `KALAH_CLIENT_TIMEOUT_S` (default `10`: a client silent that long while sending
its request, or not reading its answer, loses the connection, and a stalled body is a 408,
so stalled clients cannot hold every thread; see
[deploy.md](deploy.md#behind-nginx-slow-clients)) and `PROMETHEUS_MULTIPROC_DIR` (default: a
fresh temporary folder, removed at exit).
"""


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def _default(name: str) -> str:
    if name in DEFAULT_TEXT:
        return DEFAULT_TEXT[name]
    default = config._VARIABLES[name][2]
    return f"`{default}`"


def fixed_limits() -> str:
    """The limits that are no setting, from their constants."""
    from kalah_core.finnish import MAX_GAME_LENGTH
    from kalah_core.position import MAX_NOTATION_LENGTH, MAX_SEEDS
    from kalah_core.rules import MAX_HOUSES

    text = (
        f"Fixed limits (in `api/base/config.py`): request bodies up to "
        f"{_size(config.MAX_BODY_BYTES)} (413 above; `POST /v1/batch` up to "
        f"{_size(config.MAX_BATCH_BODY_BYTES)}), pages of at most {config.BATCH_PAGE_MAX} "
        f"results from `GET /v1/jobs/{{id}}` (NDJSON: any number), search depth up to "
        f"{config.MAX_DEPTH}, at most {config.MAX_MOVES} moves per `POST /v1/play`; the "
        f"engine's own bounds apply to positions (at most {MAX_SEEDS} seeds, 1–{MAX_HOUSES} "
        f"houses, compact notation up to {MAX_NOTATION_LENGTH} characters) and games in the "
        f"Finnish notation (up to {MAX_GAME_LENGTH} characters); an answer's PV is at most "
        f"{config.MAX_PV_SOWINGS} sowings. `GET /v1/rules` reports the limits in force."
    )
    return textwrap.fill(text, 92, break_long_words=False, break_on_hyphens=False) + "\n"


def markdown() -> str:
    """docs/config.md: the settings table with each variable's default and meaning."""
    missing = [name for name in ENV_NAMES if name not in MEANINGS]
    if missing or set(MEANINGS) - set(ENV_NAMES):
        raise ValueError(
            "api/ops/config_docs.py MEANINGS must describe exactly the settings of "
            f"api/base/config.py: missing {missing}, unknown "
            f"{sorted(set(MEANINGS) - set(ENV_NAMES))}"
        )
    rows = [f"| `{name}` | {_default(name)} | {MEANINGS[name]} |" for name in ENV_NAMES]
    table = "| variable | default | meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    return "\n".join([HEADER, table, GUNICORN_ONLY, fixed_limits()])


if __name__ == "__main__":
    print(markdown(), end="")
