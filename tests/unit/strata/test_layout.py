"""The layout's one rule: imports go one way.

    strata (leaves) < demo < index < harvester < replay < cli

and inside two of them, their parts in an order of their own:

    index:      collection, payload, revisits, surtkey < collection_meta < storage < integrity < access
                < cdx < fulltext < capture < compare < export
    harvester:  the path of a URL and the run (every module at the top) < jobs

Every import of Strata's own modules is read, function-level ones included (and those only a type
checker reads), and none may point at a package above its own, or at a part above its own within
one; and no two modules may import each other, directly or round a circle. There is no exception
list: a new import against the order fails here with the file, the line and the two packages or
parts. A new module or subpackage of ``index`` takes its place in ``SUBLAYERS`` first.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LAYERS = ("strata", "demo", "index", "harvester", "replay", "cli")
RANK = {name: rank for rank, name in enumerate(LAYERS)}
# Parts of a package (its modules and subpackages, by name), lowest first; names on one rank may not
# import each other either. "*": every part not named, which may import each other.
SUBLAYERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "index": (
        ("collection", "payload", "revisits", "surtkey"),
        ("collection_meta",),
        ("storage",),
        ("integrity",),
        ("access",),
        ("cdx",),
        ("fulltext",),
        ("capture",),
        ("compare",),
        ("export",),
    ),
    "harvester": (("*",), ("jobs",)),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in sorted((REPO / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, imported module) for every import of Strata's own modules in ``path``."""
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # `from pkg import module` imports pkg.module
                sub = f"{target}.{alias.name}"
                out.append((node.lineno, sub if sub in modules else target))
    return [(line, target) for line, target in out if target.split(".")[0] in RANK]


def _part(name: str) -> tuple[str, str] | None:
    """(package, part) of a module inside a package with parts (``index.cdx.cdxj`` -> index, cdx)."""
    pieces = name.split(".")
    if pieces[0] not in SUBLAYERS or len(pieces) < 2:
        return None
    return pieces[0], pieces[1]


def _sub_rank(package: str, part: str) -> int | None:
    for rank, names in enumerate(SUBLAYERS[package]):
        if part in names:
            return rank
    for rank, names in enumerate(SUBLAYERS[package]):
        if "*" in names:
            return rank
    return None


def _graph() -> dict[str, list[tuple[int, str]]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_package_imports_only_packages_below_it():
    against = set()
    for name, imports in _graph().items():
        for line, target in imports:
            if RANK[target.split(".")[0]] > RANK[name.split(".")[0]]:
                against.add(f"{_modules()[name].relative_to(REPO)}:{line}: {name} imports {target}")
    assert not against, "imports against the order " + " < ".join(LAYERS) + ":\n" + "\n".join(sorted(against))


def test_the_parts_of_a_package_import_only_parts_below_them():
    against = set()
    for name, imports in _graph().items():
        mine = _part(name)
        for line, target in imports:
            theirs = _part(target)
            if mine is None or theirs is None or mine[0] != theirs[0] or mine[1] == theirs[1]:
                continue
            package = mine[0]
            low, high = _sub_rank(package, theirs[1]), _sub_rank(package, mine[1])
            assert low is not None and high is not None
            unnamed = "*" in SUBLAYERS[package][high] and low == high  # the unnamed parts: one layer
            if low >= high and not unnamed:
                against.add(f"{_modules()[name].relative_to(REPO)}:{line}: {name} imports {target}")
    order = {p: " < ".join(", ".join(names) for names in ranks) for p, ranks in SUBLAYERS.items()}
    assert not against, f"imports against the order of the parts ({order}):\n" + "\n".join(sorted(against))


def test_every_part_of_an_ordered_package_has_its_place():
    """A new module or subpackage of index (no "*" there) must be put in the order, not fall through."""
    for package, ranks in SUBLAYERS.items():
        named = {name for names in ranks for name in names}
        parts = {path.stem if path.is_file() else path.name for path in (REPO / package).iterdir()}
        parts = {p for p in parts if not p.startswith(("_", ".")) and (REPO / package / p).is_dir() or
                 (REPO / package / f"{p}.py").is_file()} - {"__init__"}  # fmt: skip
        if "*" not in named:
            assert parts <= named, f"{package}: place {sorted(parts - named)} in SUBLAYERS"
        assert named - {"*"} <= parts, f"{package}: SUBLAYERS names {sorted(named - {'*'} - parts)}, which are gone"


def test_no_module_cycles():
    graph = {name: sorted({t for _, t in imports if t != name}) for name, imports in _graph().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    """The reader itself: an import inside a function, and `from pkg import module`, are seen."""
    path = tmp_path / "probe.py"
    path.write_text("def f():\n    from replay.staff import users\n    import harvester.run\n")
    modules = _modules()
    found = {target for _, target in _imports("index.probe", path, modules)}
    assert found == {"replay.staff.users", "harvester.run"}
