"""Every command and URL of README.md and docs/*.md runs here, as python-chess runs its README.

How to keep an example runnable when you write docs:

- A fence marked ``sh`` is a shell script. It runs as one ``bash`` script (``set -euo
  pipefail``: every command must succeed) in a fresh temporary folder in which ``.venv`` is
  this environment, so ``.venv/bin/kalah`` is the installed command; the cache folder
  (``XDG_CACHE_HOME``) is inside it, so a database an example builds lands there and the next
  command finds it. No traceback may be printed. Other fences (plain, ``text``, ``jsonc``...)
  are not commands.
- An HTML comment on the line just before the fence says what the block needs:

  ``<!-- docs-test: redis -->``
      a throwaway ``redis-server``: ``KALAH_REDIS_URL`` points at it (keys, jobs).
  ``<!-- docs-test: server -->``
      the service under gunicorn with its embedded default, as ``kalah serve`` runs it;
      ``http://127.0.0.1:8000`` in the block is replaced by its address (``kalah batch
      --server``, ``curl``, a KGP or book command against a running service...).
  ``<!-- docs-test: help -->``
      each line's program runs with ``--help`` appended (its subcommand and the options
      before are parsed first): for benchmarks, which take minutes to hours.
  ``<!-- docs-test: not run: WHY -->``
      never run: only for what cannot run in a test (it runs until stopped, installs from the
      package index, or is this suite itself). WHY says what tests it instead. At most
      :data:`NOT_RUN_MAX` such blocks in all.

- README.md's first two blocks are the install and test commands: the second must be exactly
  what ``.ci/run`` runs, and the ``kalah serve`` of the first is started and stopped.
- Every ``http://127.0.0.1:8000/...`` URL anywhere in the text (prose, images, blocks) is
  fetched through Flask's test client and must answer 200.
- A ``jsonc`` fence is an annotated answer: its first line is ``// GET <path>``; every key it
  shows exists in the real answer, and every top-level scalar it shows equals the real one
  (but ``nodes`` and ``time_ms``, which vary). ``//`` comments and elisions are free.
- docs/config.md is generated: ``.venv/bin/python -m kalah_service.ops.config_docs >
  docs/config.md``.
- Every relative link ``[text](file.md#anchor)`` points at a file that exists and a heading
  of it; HISTORY.md's links too (its commands are a record of past runs, never run here).
- A guide in docs/ is at most :data:`GUIDE_MAX_LINES` lines: dated runs and measurement logs go
  to HISTORY.md. The endpoint table is docs/api.md's alone, and lists every route the app has.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kalah_service import create_app
from kalah_service.ops import config_docs

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV = Path(sys.prefix)
NOT_RUN_MAX = 4
GUIDE_MAX_LINES = 250
HISTORY = ROOT / "HISTORY.md"
"""Blocks that cannot run in a test (a server that runs until stopped, an install from the
package index, this suite itself): keep them this few."""

FENCE = re.compile(r"^```(\S*)\s*$")
NEEDS = re.compile(r"^<!-- docs-test: (redis|server|help|not run: (.+)) -->$")
URL = re.compile(r"http://(?:127\.0\.0\.1|localhost):8000(/[^\s)`'\"<>]*)?")
BASE = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    needs: str  # "", "redis", "server", "help" or "not run"
    why: str = ""

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        needs = NEEDS.match(lines[i - 1]) if i else None
        kind, why = "", ""
        if needs is not None:
            kind = "not run" if needs.group(2) else needs.group(1)
            why = needs.group(2) or ""
        text = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(path, i + 1, opening.group(1), text, kind, why))
        i = end + 1
    return found


ALL = [block for path in DOCS for block in blocks(path)]
README = [b for b in ALL if b.path.name == "README.md"]
INSTALL, TEST_COMMAND = README[0], README[1]
SHELL = [b for b in ALL if b.lang == "sh" and b not in (INSTALL, TEST_COMMAND)]
RUN = [b for b in SHELL if b.needs != "not run"]


def test_the_docs_have_examples() -> None:
    assert len(RUN) >= 3 and any(b.needs == "help" for b in RUN)
    assert DOCS[0].name == "README.md" and len(DOCS) >= 7


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert INSTALL.text.startswith("python3 -m venv .venv") and "kalah serve" in INSTALL.text
    assert TEST_COMMAND.text.strip() in ci, "the README's second command is what .ci/run runs"


def test_blocks_that_are_not_run_are_few_and_say_why() -> None:
    skipped = [b for b in SHELL if b.needs == "not run"]
    assert len(skipped) <= NOT_RUN_MAX, [b.id for b in skipped]
    for block in skipped:
        assert len(block.why) > 30, block.id


def test_config_md_is_generated_from_the_settings_table() -> None:
    expected = config_docs.markdown()
    actual = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert actual == expected, (
        "docs/config.md is out of date: "
        ".venv/bin/python -m kalah_service.ops.config_docs > docs/config.md"
    )


# --------------------------------------------------------------------------- links


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def links() -> list[tuple[str, str]]:
    found = []
    for path in [*DOCS, HISTORY]:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
            if not re.match(r"[a-z]+:", target):
                found.append((path.name, target))
    return found


@pytest.mark.parametrize(("source", "target"), links(), ids=[f"{s}->{t}" for s, t in links()])
def test_every_link_between_the_docs_resolves(source: str, target: str) -> None:
    base = ROOT if source in ("README.md", HISTORY.name) else ROOT / "docs"
    name, _, anchor = target.partition("#")
    path = (base / name).resolve() if name else base / source
    assert path.exists(), target
    if anchor:
        headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert anchor in {slug(h) for h in headings}, (target, [slug(h) for h in headings])


def test_the_readme_links_every_doc_and_stays_short() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in DOCS[1:]:
        assert f"](docs/{path.name})" in readme, f"README.md has no link to docs/{path.name}"
    assert f"]({HISTORY.name})" in readme, "README.md has no link to HISTORY.md"
    assert len(readme.splitlines()) <= 200, "a README a newcomer reads in five minutes"


@pytest.mark.parametrize("path", DOCS[1:], ids=[p.name for p in DOCS[1:]])
def test_every_guide_is_short(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= GUIDE_MAX_LINES, f"{path.name}: {lines} lines; dated runs go to HISTORY.md"


DOCUMENTED = re.compile(r"`((?:GET|POST|DELETE|PUT|PATCH) /[^`?]*)")


def test_the_endpoint_table_lives_in_api_md_and_lists_every_route(docs_client: Any) -> None:
    for path in DOCS:
        if path.name != "api.md":
            text = path.read_text(encoding="utf-8")
            assert "| endpoint |" not in text, f"{path.name} copies the endpoint table"
    api_md = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    table = api_md[api_md.index("| endpoint | what |") :].split("\n\n")[0]
    documented = {
        " ".join(call.split()) for row in table.splitlines() for call in DOCUMENTED.findall(row)
    }
    routes: set[str] = set()
    for rule in docs_client.application.url_map.iter_rules():
        if "<path:" in rule.rule or rule.endpoint in ("static", "page.docs_asset"):
            continue  # files served under a prefix (the board's and Swagger UI's assets)
        route = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule).replace("{job_id}", "{id}")
        routes |= {f"{method} {route}" for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert documented == routes, (sorted(routes - documented), sorted(documented - routes))


# --------------------------------------------------------------------------- URLs


def urls() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for path in DOCS:
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in URL.finditer(line):
                found.setdefault(match.group(1) or "/", f"{path.name}:{line_no}")
    return sorted(found.items())


@pytest.fixture
def docs_client(tmp_path: Path) -> Any:
    """The service on its embedded default, with an empty answer store of its own."""
    app = create_app(
        {"TESTING": True, "KALAH_REDIS_URL": "", "KALAH_CACHE_DIR": str(tmp_path / "answers")}
    )
    return app.test_client()


@pytest.mark.parametrize(("url", "where"), urls(), ids=[u for u, _ in urls()])
def test_every_url_answers(docs_client: Any, url: str, where: str) -> None:
    response = docs_client.get(url)
    assert response.status_code == 200, (where, url, response.get_data(as_text=True)[:300])


def annotated() -> list[Block]:
    return [b for b in ALL if b.lang == "jsonc"]


def keys_of(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(keys_of(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_of(v) for v in value))
    return set()


@pytest.mark.parametrize("block", annotated(), ids=[b.id for b in annotated()])
def test_annotated_answers_are_the_real_ones(docs_client: Any, block: Block) -> None:
    first, _, body = block.text.partition("\n")
    request = re.fullmatch(r"// GET (/\S+)", first.strip())
    assert request is not None, f"{block.id}: the first line must be // GET <path>"
    answer = docs_client.get(request.group(1)).get_json()
    text = re.sub(r"\s//.*", "", body)
    shown = re.findall(r'"(\w+)":', text)
    assert shown and set(shown) <= keys_of(answer), set(shown) - keys_of(answer)
    pair = re.compile(r'"(\w+)": ("[^"]*"|-?[\d.]+|true|false|null)\s*[,}\n]')
    for match in pair.finditer(text):
        before = re.sub(r'"[^"]*"', "", text[: match.start()])
        depth = before.count("{") + before.count("[") - before.count("}") - before.count("]")
        key, raw = match.groups()
        if depth == 1 and key not in ("nodes", "time_ms"):  # a top-level field
            assert answer[key] == json.loads(raw), (block.id, key)


# --------------------------------------------------------------------------- commands


def environment(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KALAH_")}
    env.update({"XDG_CACHE_HOME": str(folder / "cache"), "KALAH_EGDB_SEEDS": "0", **extra})
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(script: str, folder: Path, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{script}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def help_commands(text: str) -> list[list[str]]:
    """Each command of a ``help`` block: its words up to the comment, then ``--help``."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append([*words, "--help"])
    return commands
