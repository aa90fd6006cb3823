"""Module structure: no import circles, and every module imports on its own."""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import ROOT

PACKAGES = ("pipeline", "assets", "resources")


def _modules() -> dict[str, ast.Module]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def _imports(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """Project modules `name` imports anywhere (function bodies too), except under TYPE_CHECKING."""
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    targets = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets.add(node.module)
            targets |= {f"{node.module}.{a.name}" for a in node.names}
    # a module imports its own parent packages too; they are not edges of a circle
    return {t for t in targets if t in known and not name.startswith(t + ".") and t != name}


def test_no_import_circles():
    modules = _modules()
    graph = {name: _imports(name, tree, set(modules)) for name, tree in modules.items()}
    circles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


# Each module is imported first thing in a child forked from one interpreter that holds only the
# third-party libraries the modules import at their top: what is checked is the project's own
# import order, and the libraries' 1-2 s per interpreter is paid once instead of once per module.
FORKING_IMPORTER = r"""
import importlib, os, sys, traceback
for library in sys.argv[1].split(","):
    try:
        importlib.import_module(library)
    except Exception:
        pass  # an optional library: the child that needs it reports it
for name in sys.argv[2].split(","):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            os._exit(0)
        except BaseException:
            os.write(write, traceback.format_exc().strip().splitlines()[-1].encode())
            os._exit(1)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    if os.waitpid(pid, 0)[1]:
        print(f"{name}\t{message or 'died'}")
"""


def _libraries(modules: dict[str, ast.Module]) -> set[str]:
    """Third-party and standard libraries imported at a module's top (vLLM left out: it starts
    processes of its own)."""
    found = set()
    for tree in modules.values():
        for node in ast.walk(ast.Module(body=[n for n in tree.body if not isinstance(n, (ast.FunctionDef,
                                        ast.AsyncFunctionDef, ast.ClassDef))], type_ignores=[])):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found - set(PACKAGES) - {"vllm", "__future__"}


def test_every_module_imports_on_its_own():
    # vllm_engine: see test_vllm_engine.py; a __main__ module runs its program when imported
    modules = _modules()
    names = [n for n in modules if not n.endswith(("vllm_engine", "__main__"))]
    done = subprocess.run([sys.executable, "-c", FORKING_IMPORTER, ",".join(sorted(_libraries(modules))),
                           ",".join(names)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    failures = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    assert not failures, failures


def _package(module: str, modules: dict[str, ast.Module]) -> str:
    """The package a module belongs to: the deepest folder holding it (a package's __init__ is
    the package itself)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules and (ROOT / candidate.replace(".", "/")).is_dir():
            return candidate
    return parts[0]


def test_no_private_name_is_imported_from_another_package():
    """A name that starts with _ is its package's own: another package that needs it gets a
    public name (as `pipeline.dedup.keys.char_key` is for the contamination n-grams)."""
    modules = _modules()
    found = []
    for name, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in modules and node.level == 0:
                if _package(node.module, modules) != _package(name, modules):
                    found += [f"{name} imports {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not found, "\n".join(found)


# The floors of the code, lowest first. A unit is a folder of modules (`pipeline/sources/`, each
# card's folder), or a module that sits directly in pipeline/. A unit may import its own floor
# and the floors below it; an import of a higher floor is an arrow back up, and ARROWS_UP lists
# the only ones allowed.
FLOORS = (
    ("base", ("pipeline", "pipeline.errors", "pipeline.settings", "pipeline.paths", "pipeline.rows",
              "pipeline.schema", "pipeline.script", "pipeline.texttable", "pipeline.terminal",
              "pipeline.progress", "pipeline.stopping", "pipeline.redact", "pipeline.memory",
              "pipeline.locking", "pipeline.failures", "pipeline.lake_health")),
    # the card registry imports its cards when first asked (importlib), so every floor may look a card up
    ("registry", ("pipeline.benchmarks",)),
    ("parts", ("pipeline.sources", "pipeline.dedup", "pipeline.aggregate", "pipeline.scoring",
               "pipeline.engines", "pipeline.judge", "pipeline.corrections", "pipeline.history",
               "pipeline.charts")),
    ("configuration", ("pipeline.config",)),
    ("card parts", ("pipeline.benchmark_card", "pipeline.contamination")),
    ("cards", ("pipeline.benchmarks.*",)),
    ("stages", ("pipeline.ingest", "pipeline.standardize", "pipeline.prompts", "pipeline.inference",
                "pipeline.warehouse", "pipeline.compare", "pipeline.compare_published", "pipeline.reports")),
    ("dagster", ("resources", "assets", "pipeline.groups", "pipeline.executors", "pipeline.run_inputs",
                 "pipeline.staleness", "pipeline.definitions", "pipeline.runner")),
    ("commands", ("pipeline.cli", "pipeline.testing")),
)
ARROWS_UP: frozenset[tuple[str, str]] = frozenset()


def _unit(module: str) -> str:
    parts = module.split(".")
    folder = parts if (ROOT.joinpath(*parts)).is_dir() else parts[:-1]
    return module if folder == ["pipeline"] else ".".join(folder)


def _floor(unit: str) -> int:
    for number, (_, units) in enumerate(FLOORS):
        if unit in units or any(u.endswith(".*") and unit.startswith(u[:-1]) for u in units):
            return number
    raise AssertionError(f"{unit} is on no floor: add it to FLOORS in {__file__}")


def _unit_arrows() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the module imports that make the arrow."""
    modules = _modules()
    arrows: dict[tuple[str, str], list[str]] = {}
    for name, tree in modules.items():
        for target in _imports(name, tree, set(modules)):
            if _unit(name) != _unit(target):
                arrows.setdefault((_unit(name), _unit(target)), []).append(f"{name} -> {target}")
    return arrows


def test_no_circle_between_packages():
    graph: dict[str, set[str]] = {}
    for source, target in _unit_arrows():
        graph.setdefault(source, set()).add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            unit = todo.pop()
            if unit == goal:
                return True
            if unit not in seen:
                seen.add(unit)
                todo += graph.get(unit, ())
        return False

    circles = sorted(f"{a} -> {b} -> ... -> {a}" for a in graph for b in graph[a] if reaches(b, a))
    assert not circles, "package circles:\n" + "\n".join(circles)


def test_no_arrow_back_up_the_floors_but_the_listed_ones():
    arrows = _unit_arrows()
    up = {(a, b): why for (a, b), why in arrows.items() if _floor(a) < _floor(b)}
    unlisted = {arrow: why for arrow, why in up.items() if arrow not in ARROWS_UP}
    assert not unlisted, "imports of a higher floor:\n" + "\n".join(
        f"{a} ({FLOORS[_floor(a)][0]}) -> {b} ({FLOORS[_floor(b)][0]}): {why}" for (a, b), why in unlisted.items())
    assert len(ARROWS_UP) <= 4 and ARROWS_UP <= set(up), "ARROWS_UP lists at most 4 arrows, each still there"
