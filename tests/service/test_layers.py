"""The import graph of the project's own modules, read from the source (no import runs).

Every import counts as an edge: module level, inside ``if TYPE_CHECKING:`` and inside a
function. A function-level import does not break a cycle, it only hides it from the
interpreter, so the graph with all of them must have none. The engine never imports the service.

Run ``python tests/service/test_layers.py`` to print the graph's cycles and every
function-level import.
"""

from __future__ import annotations

import ast
import functools
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kalah_core", "api")  # source folders; api/ installs as kalah_service
INSTALLED = {"kalah_service": "api"}
ACYCLIC = ("kalah_core", "api")  # the packages whose graph (with every import) must have no cycle


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported project module
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every module of ours by name: Python sources, and the compiled ones (by their .pyx),
    which import none of ours at run time."""
    return {
        module_name(path): path
        for package in PACKAGES
        for suffix in ("*.py", "*.pyx")
        for path in sorted((ROOT / package).rglob(suffix))
        if "static" not in path.parts
    }


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    in_function = {id(sub) for f in functions for sub in ast.walk(f)}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            # ``from package import module`` imports the module; ``from module import name``
            # the module that defines the name.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in targets:
            head, _, tail = target.partition(".")
            if head in INSTALLED:  # the installed name of a source folder
                target = INSTALLED[head] + ("." + tail if tail else "")
            while target and target not in known:  # a.b.c where only a.b is ours
                target = target.rpartition(".")[0]
            if target and target != module:
                yield Import(module, target, node.lineno, id(node) in in_function)


@functools.cache  # read once for the tests below, which each filter it
def all_imports() -> tuple[Import, ...]:
    modules = project_modules()
    known = set(modules)
    found = {
        i: None
        for name, path in modules.items()
        if path.suffix == ".py"
        for i in imports_of(name, path, known)
    }
    return tuple(found)  # one edge per import statement, in order


def cycles(edges: Sequence[Import]) -> list[list[str]]:
    """The graph's strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    edges = [i for i in all_imports() if i.source.startswith(ACYCLIC)]
    assert cycles(edges) == []


def folder_of(module: str) -> str:
    """The storey a service module stands in: its first folder under api/, or ``api`` for the
    flat modules (the app factory and the entry points beside it)."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (ROOT / "api" / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return "api"


def folder_edges(edges: list[Import]) -> list[Import]:
    """The service's import graph with each module replaced by its folder (storey)."""
    return [
        Import(folder_of(i.source), folder_of(i.target), i.line, i.in_function)
        for i in edges
        if i.source.startswith("api")
        and i.target.startswith("api")
        and folder_of(i.source) != folder_of(i.target)
    ]


def test_the_service_folders_import_each_other_without_a_cycle() -> None:
    """Module-level acyclicity still lets two folders lean on each other through different
    modules; the storeys of api/ must form a ladder."""
    assert cycles(folder_edges(all_imports())) == []


RESOURCES = ("analysis", "batch", "board", "games", "health", "play", "problems", "rules")
"""The folders of api/ that are HTTP resources (routes and schemas)."""


def test_no_resource_imports_another() -> None:
    """What two resources share stands in a storey below them (/readyz counts the batch
    workers through the job store in jobs/, not through batch/)."""
    resources = {f"api.{name}" for name in RESOURCES}
    edges = {
        (i.source, i.target)
        for i in folder_edges(all_imports())
        if i.source in resources and i.target in resources
    }
    assert edges == set()


def test_no_service_module_is_named_like_an_engine_module() -> None:
    """One name, one concept: ``answer.py`` in both packages meant two things to a reader."""
    engine = {path.name for path in (ROOT / "kalah_core").rglob("*.py")} - {"__init__.py"}
    service = {path.relative_to(ROOT).as_posix() for path in (ROOT / "api").rglob("*.py")}
    assert sorted(name for name in service if name.rpartition("/")[2] in engine) == []


BACKENDS = ("redis", "diskcache", "sqlite3")


def test_routes_reach_backends_only_through_their_interfaces() -> None:
    """A route catches its store's ``errors``; it never imports a backend's library."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "api").rglob("routes.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name.split(".")[0] in BACKENDS
            for name in (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if not node.level
                else []
            )
        )
    ]
    assert offenders == []


MAX_LINES = 600


def test_no_service_module_is_over_the_line_limit() -> None:
    lines = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "api").rglob("*.py")
    }
    assert {name: n for name, n in lines.items() if n > MAX_LINES} == {}


def test_the_engine_never_imports_the_service() -> None:
    edges = [i for i in all_imports() if i.source.startswith("kalah_core")]
    assert [i for i in edges if i.target.split(".")[0] == "api"] == []


# The command line (kalah_core.cli and its command groups' modules) imports the modules of a
# command when it runs, so that each command starts with its own imports only (`kalah solve`
# without the book builders or the KGP agent: issue 51, start-up). Those edges still count in
# the cycle test above; the commands' modules never import the command line.
LAZY_IMPORTER = "kalah_core.cli"


def lazy_importer(module: str) -> bool:
    return module == LAZY_IMPORTER or module.startswith(LAZY_IMPORTER + ".")


def test_the_engine_has_no_function_level_import_of_its_own_modules() -> None:
    edges = [
        i
        for i in all_imports()
        if i.source.startswith("kalah_core") and i.in_function and not lazy_importer(i.source)
    ]
    assert edges == []


def test_the_command_line_imports_lazily_only_modules_that_never_import_it() -> None:
    lazy = {i.target for i in all_imports() if lazy_importer(i.source) and i.in_function}
    assert lazy, "the exception above is still needed"
    assert not [i for i in all_imports() if i.source in lazy and lazy_importer(i.target)]


def test_every_service_package_is_installed_under_its_name() -> None:
    """pyproject.toml lists the service's packages by hand (its package-dir maps api/ to
    kalah_service): a new folder under api/ that is not listed would be left out of the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {
        module_name(path.parent).replace("api", "kalah_service", 1)
        for path in (ROOT / "api").rglob("__init__.py")
    }
    assert folders <= listed
    assert config["tool"]["setuptools"]["package-dir"] == {"kalah_service": "api"}


def test_tests_and_benchmarks_import_the_service_by_its_installed_name() -> None:
    """``import api`` would load the source folder a second time beside kalah_service (two
    copies of every module's state) whenever the checkout is on sys.path."""
    offenders = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and not node.level
                    else []
                )
                if any(name.split(".")[0] == "api" for name in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_reader_sees_a_known_cycle_and_a_function_level_import(tmp_path: Path) -> None:
    # The test above would pass on a reader that sees nothing: check it on a made-up graph.
    edges = [Import("a", "b", 1, False), Import("b", "c", 1, True), Import("c", "a", 1, False)]
    assert cycles(edges) == [["a", "b", "c"]]
    source = ROOT / "kalah_core" / "game.py"
    found = list(imports_of("kalah_core.game", source, set(project_modules())))
    assert any(i.target == "kalah_core.finnish" for i in found)


if __name__ == "__main__":
    edges = all_imports()
    for component in cycles(edges):
        print("cycle:", " <-> ".join(component))
    local = [i for i in edges if i.in_function]
    for i in local:
        print(f"function-level: {i.source}:{i.line} -> {i.target}")
    print(f"{len(cycles(edges))} cycles, {len(local)} function-level imports of project modules")
    folders = folder_edges(edges)
    graph: dict[str, set[str]] = {}
    for i in folders:
        graph.setdefault(i.source, set()).add(i.target)
    for folder in sorted(graph):
        print(f"folder {folder} -> {', '.join(sorted(graph[folder]))}")
    for component in cycles(folders):
        print("folder cycle:", " <-> ".join(component))
    sys.exit(1 if cycles(edges) or cycles(folders) else 0)
