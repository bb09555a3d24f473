"""The shape of the package: no import circles, and no layer importing one above it.

Imports are read from the source (every `import`, including those inside
functions and under `if TYPE_CHECKING:`), so a circle that only closes at run
time, or only for the type checker, still counts. The layers are the arrows of
the Mermaid diagram in ARCHITECTURE.md: a package may import those its arrows
reach, directly or through other packages, and nothing else.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "adcli"

# The one circle allowed (issue 15): none today. A pair would go here, with the
# measured per-op cost of breaking it, if the tensor and op layer ever need one.
ALLOWED_CYCLES: list[frozenset[str]] = []

MAX_TOP_LEVEL_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The adcli modules that `name` imports (a package's names resolve to its modules)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target not in known and "." in target:
            target = target.rpartition(".")[0]
        if target in known and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "adcli":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "adcli":
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                add(full if full in known else module)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module name -> the adcli modules it imports."""
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan's
    algorithm, iterative: no recursion however long a chain of imports is)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def layer_of(module: str) -> str:
    """The package a module belongs to (`autograd`, `lang`, ...), or the module's
    own name for one at the top level (`cli`, `provenance`, ...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "adcli"


def diagram_arrows() -> dict[str, set[str]]:
    """`A --> B` arrows of ARCHITECTURE.md's Mermaid block: A may import B."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert block, "ARCHITECTURE.md has no ```mermaid block"
    arrows: dict[str, set[str]] = {}
    for a, b in re.findall(r"^\s*(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)", block.group(1), re.M):
        arrows.setdefault(a, set()).add(b)
    return arrows


def reachable(arrows: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each node's transitive closure under `arrows`."""
    closure: dict[str, set[str]] = {}
    for start in arrows:
        seen: set[str] = set()
        todo = list(arrows[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(arrows.get(node, ()))
        closure[start] = seen
    return closure


def test_the_graph_reader_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    found = [c for c in cycles(import_graph()) if frozenset(c) not in ALLOWED_CYCLES]
    assert not found, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("autograd", None),  # the ground floor imports nothing of adcli
        ("lang", None),  # the language knows nothing of tensors, nn or reports
        ("lang", "render"),
        ("render", "lang"),
    ],
)
def test_lower_layers_do_not_import_higher_ones(lower: str, higher: str | None) -> None:
    bad = sorted(
        f"{m} imports {t}"
        for m, targets in import_graph().items()
        if layer_of(m) == lower
        for t in targets
        if layer_of(t) != lower and (higher is None or layer_of(t) == higher)
    )
    assert not bad, "\n".join(bad)


def test_every_import_follows_an_arrow_of_the_diagram() -> None:
    arrows = diagram_arrows()
    allowed = reachable(arrows)
    bad = []
    for module, targets in import_graph().items():
        if module == "adcli.__main__":  # `python -m adcli`: two lines calling adcli.cli
            continue
        a = layer_of(module)
        if a == "adcli":  # top-level modules are drawn under their own names
            a = module.split(".")[-1]
        for target in targets:
            if target == "adcli":  # the package itself holds only __version__
                continue
            b = layer_of(target)
            if b == "adcli":
                b = target.split(".")[-1]
            if a != b and b not in allowed.get(a, set()):
                bad.append(f"{module} imports {target}: no arrow from {a} to {b}")
    assert not bad, "\n".join(sorted(bad))


def test_the_diagram_has_no_circle() -> None:
    arrows = diagram_arrows()
    assert cycles({k: arrows.get(k, set()) for k in set(arrows).union(*arrows.values())}) == []


def test_few_modules_at_the_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_each_command_has_its_module() -> None:
    for command in ("run", "test", "graph", "check", "repl"):
        assert (PACKAGE / "commands" / f"{command}.py").is_file(), command
