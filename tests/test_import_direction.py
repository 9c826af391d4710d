"""Imports point down the flow parcels → levy → billing, and billing's modules form no circle.

Every ``.py`` file of ``parcels/``, ``levy/`` and ``billing/`` is read with ``ast`` (migrations
included, and every import wherever it stands: inside functions, under ``TYPE_CHECKING``), so
an import hidden in a function body counts like any other. Nothing is imported to do this."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("parcels", "levy", "billing")  # the flow: each may import only those before it
LAYER = {app: index for index, app in enumerate(APPS)}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(root: Path, apps: Iterable[str] = APPS) -> dict[str, tuple[Path, str]]:
    """``{module name: (path, source)}`` of every .py file of the apps."""
    found = {}
    for app in apps:
        for path in sorted((root / app).rglob("*.py")):
            found[module_name(path, root)] = (path, path.read_text(encoding="utf-8"))
    return found


def imports_of(module: str, source: str, *, is_package: bool, known: set[str]) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every import statement anywhere in ``source``, relative
    imports resolved; ``from pkg import name`` counts as ``pkg.name`` when that is a module."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.append((node.lineno, candidate if candidate in known else target))
    return found


def import_graph(found: dict[str, tuple[Path, str]]) -> dict[str, list[tuple[int, str]]]:
    known = set(found)
    return {
        module: imports_of(module, source, is_package=path.name == "__init__.py", known=known)
        for module, (path, source) in found.items()
    }


def upward_imports(graph: dict[str, list[tuple[int, str]]], paths: dict[str, Path]) -> list[str]:
    """Imports from an app into an app later in the flow (parcels → levy or billing, levy → billing)."""
    wrong = []
    for module, targets in graph.items():
        here = LAYER[module.split(".")[0]]
        for line, target in targets:
            there = LAYER.get(target.split(".")[0])
            if there is not None and there > here:
                wrong.append(f"{paths[module].relative_to(ROOT) if paths[module].is_relative_to(ROOT) else paths[module]}:{line}: "
                             f"{module} imports {target}")
    return wrong


def owning_module(target: str, modules: set[str]) -> str | None:
    """The module of ``modules`` that ``target`` names (``billing.models.Charge`` → ``billing.models``)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def cycles(graph: dict[str, list[tuple[int, str]]], app: str) -> list[list[str]]:
    """The circles among the modules of ``app`` (Tarjan's strongly connected components of more
    than one module, or a module importing itself), each sorted."""
    modules = {module for module in graph if module == app or module.startswith(app + ".")}
    edges = {
        module: sorted({owner for _, target in graph[module] if (owner := owning_module(target, modules)) and owner != app})
        for module in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for successor in edges[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges[node]:
                found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return sorted(found)


def test_every_import_points_down_the_flow():
    found = sources(ROOT)
    graph = import_graph(found)
    assert any(module.startswith("billing.services.") for module in graph)  # the files were read
    assert any(".migrations." in module for module in graph)  # migrations too
    assert upward_imports(graph, {module: path for module, (path, _) in found.items()}) == []


def test_no_circle_among_billings_modules():
    graph = import_graph(sources(ROOT))
    assert cycles(graph, "billing") == []


def test_no_circle_among_the_modules_of_any_app():
    """No app's modules import each other in a circle, at module level or inside a function (issue
    17 §7: parcels had two, middleware → second_factor → services → middleware over ``client_ip``,
    and models ↔ search over the search transforms). Between apps the flow test above already
    rules circles out: every import points down parcels → levy → billing."""
    graph = import_graph(sources(ROOT))
    assert {app: cycles(graph, app) for app in APPS} == {app: [] for app in APPS}
    # the two that were cut stay cut: each edge of the old circles that is left points one way
    edges = {module: {target for _, target in targets} for module, targets in graph.items()}
    assert "parcels.network" in edges["parcels.services"] and "parcels.lookups" in edges["parcels.models"]
    assert not any(target.startswith("parcels.search") for target in edges["parcels.models"])


def test_documents_never_import_services():
    graph = import_graph(sources(ROOT))
    assert [target for _, target in graph["billing.documents"] if target.startswith("billing.services")] == []


# --- the checks themselves fail on a bad import ---------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, tuple[Path, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for app in APPS:
        (tmp_path / app).mkdir(exist_ok=True)
        (tmp_path / app / "__init__.py").touch()
    found = {}
    for app in APPS:
        for path in sorted((tmp_path / app).rglob("*.py")):
            found[module_name(path, tmp_path)] = (path, path.read_text(encoding="utf-8"))
    return found


def test_an_upward_import_inside_a_function_is_caught(tmp_path):
    found = _tree(tmp_path, {
        "parcels/views.py": "def home():\n    from billing.accounts import statement\n",
        "levy/services.py": "from parcels.models import Parcel\n\ndef f():\n    from billing import services\n",
        "levy/migrations/0002_x.py": "import billing.models\n",
        "billing/accounts.py": "from levy.models import Levy\nfrom parcels import search\n",
    })
    wrong = upward_imports(import_graph(found), {module: path for module, (path, _) in found.items()})
    assert sorted(line.split(": ", 1)[1] for line in wrong) == [
        "levy.migrations.0002_x imports billing.models",
        "levy.services imports billing",
        "parcels.views imports billing.accounts",
    ]


def test_a_circle_hidden_in_a_function_is_caught(tmp_path):
    found = _tree(tmp_path, {
        "billing/services/__init__.py": "",
        "billing/services/counter.py": "from .. import documents\n",
        "billing/documents.py": "from .models import Receipt\n\ndef render():\n    from .services.counter import payment_record\n",
        "billing/models.py": "",
        "billing/accounts.py": "from . import models\n",
    })
    assert cycles(import_graph(found), "billing") == [["billing.documents", "billing.services.counter"]]


def test_a_three_module_circle_in_parcels_is_caught(tmp_path):
    """The shape of the circle issue 17 found: two imports inside functions, one at the top."""
    found = _tree(tmp_path, {
        "parcels/middleware.py": "def view():\n    from .second_factor import pending\n",
        "parcels/second_factor.py": "from .services import acting\n",
        "parcels/services.py": "def record():\n    from .middleware import client_ip\n",
        "parcels/models.py": "from .search import Fold\n",
        "parcels/search.py": "def matching():\n    from .models import Parcel\n",
    })
    assert cycles(import_graph(found), "parcels") == [
        ["parcels.middleware", "parcels.second_factor", "parcels.services"], ["parcels.models", "parcels.search"],
    ]
