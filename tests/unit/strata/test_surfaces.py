"""Each package's and subpackage's ``__init__.py`` declares what other packages may use (``__all__``:
its modules and names), and other packages import nothing else of it. A module that declares an
``__all__`` of its own is held to it by other top-level packages too.

An import of ``a.b.c`` (or from it) by a module outside ``a`` needs ``b`` in ``a.__all__`` and ``c``
in ``a.b.__all__``; by a module of ``a`` outside ``a.b``, only the second. Names taken from a
package itself (``from index.export.wacz import export_wacz``) must be in its ``__all__``. Every
import is read, function-level ones included (``test_layout``'s reader).
"""

from __future__ import annotations

import ast
import functools

from tests.unit.strata import test_layout
from tests.unit.strata.test_layout import REPO

_modules = functools.cache(test_layout._modules)
PACKAGES = {name for name, path in _modules().items() if path.name == "__init__.py"}


@functools.cache
def _declared(package: str) -> list[str] | None:
    path = REPO / package.replace(".", "/") / "__init__.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _imports(name: str, path) -> list[tuple[int, str, list[str]]]:
    """(line, module imported, names taken from it) for each import of Strata's own code."""
    modules = _modules()
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = (
                ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                if node.level
                else node.module or ""
            )
            names = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    out.append((node.lineno, sub, []))
                else:
                    names.append(alias.name)
            if names:
                out.append((node.lineno, target, names))
    return [(line, target, names) for line, target, names in out if target.split(".")[0] in _TOP]


_TOP = {name.split(".")[0] for name in PACKAGES}


@functools.cache
def _module_all(module: str) -> list[str] | None:
    path = _modules().get(module)
    if path is None or path.name == "__init__.py":
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _undeclared(importer: str, target: str, names: list[str]) -> list[str]:
    """What ``importer`` takes of ``target`` that a package between them does not declare."""
    own = importer if importer in PACKAGES else importer.rsplit(".", 1)[0]
    pieces = target.split(".")
    declared_here = _module_all(target) if pieces[0] != importer.split(".")[0] else None
    wrong = [f"{target}.{n}" for n in names if declared_here is not None and n not in declared_here]
    for i in range(1, len(pieces) + 1):
        package = ".".join(pieces[:i])
        if package not in PACKAGES or own == package or own.startswith(package + "."):
            continue
        declared = _declared(package) or []
        wanted = [pieces[i]] if i < len(pieces) else names
        wrong += [f"{package}.{w}" for w in wanted if w not in declared]
    return wrong


def test_every_package_declares_its_surface():
    missing = sorted(p for p in PACKAGES if _declared(p) is None)
    assert not missing, f"packages without __all__: {missing}"


def _defined(package: str) -> set[str]:
    """The names an ``__init__.py`` defines or imports at its top level."""
    path = REPO / package.replace(".", "/") / "__init__.py"
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def test_what_a_package_declares_exists():
    modules = _modules()
    for package in PACKAGES:
        for entry in _declared(package) or []:
            assert f"{package}.{entry}" in modules or entry in _defined(package), (
                f"{package}.__all__ names {entry!r}, which is neither a module of it nor defined in it"
            )


def test_other_packages_import_only_what_is_declared():
    against = []
    for name, path in sorted(_modules().items()):
        for line, target, names in _imports(name, path):
            for entry in _undeclared(name, target, names):
                against.append(f"{path.relative_to(REPO)}:{line}: {name} imports {entry}, not declared")
    assert not against, (
        "imports of what a package does not declare (add it to its __all__, or import what it does):\n"
        + "\n".join(against)
    )


def test_the_rule_sees_an_undeclared_module_and_name():
    assert _undeclared("harvester.run", "index.fulltext.mapfile", []) == ["index.fulltext.mapfile"]
    assert _undeclared("index.capture.rebuild", "index.cdx.cdxj", []) == []
    assert _undeclared("index.capture.rebuild", "index.fulltext.mapfile", []) == ["index.fulltext.mapfile"]
    assert _undeclared("index.fulltext.query", "index.fulltext.mapfile", []) == []  # inside its own package
    assert _undeclared("cli.exporting", "index.export.wacz", ["export_wacz", "_private"]) == [
        "index.export.wacz._private"
    ]
    assert _undeclared("replay.search", "index.fulltext.query", ["search", "MAX_DOCS", "_group_hits"]) == [
        "index.fulltext.query._group_hits"
    ]
