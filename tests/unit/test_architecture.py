"""The shape of the house, as docs/layers.toml states it: no import cycles, the parts and the
reaches between them that must never happen, a Flask-free core, protocol halves and plugins."""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "flask_predict"
LAYERS = ROOT / "docs" / "layers.toml"
PLUGINS = ("flask_predict_sklearn", "flask_predict_xgboost", "flask_predict_custom",
           "flask_predict_tensorflow", "flask_predict_lightgbm", "flask_predict_catboost",
           "flask_predict_onnx", "flask_predict_mlflow")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package.parent): p for p in package.rglob("*.py")}


@dataclass(frozen=True)
class Reach:
    """One import (or attribute reach) a module makes, and how."""

    target: str
    line: int
    how: str
    """``runtime`` (top level), ``deferred`` (in a function), ``type-only``
    (``if TYPE_CHECKING:``), ``by-name`` (a string naming a module, ``module:attribute``
    or ``module.Class``, which ``import_module`` or a plugin loader loads later) or
    ``attribute``."""


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def named_module(text: str, known: set[str]) -> str | None:
    """The module of *known* that string *text* names whole (``a.b``, ``a.b:attr``,
    ``a.b.Class``), if it names one."""
    path = text.partition(":")[0]
    if "." not in path:
        return None  # the package's own name: a logger's or an extension's key, no load
    if path in known:
        return path
    parent, _, last = path.rpartition(".")
    return parent if "." in parent and parent in known and last.isidentifier() else None


def _text(node: ast.Constant | ast.JoinedStr, module: str) -> str:
    """A string constant's text; an f-string's, where its only field is ``__name__``."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    pieces = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            pieces.append(value.value)
        elif (isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name)
              and value.value.id == "__name__"):
            pieces.append(module)
        else:
            return ""
    return "".join(pieces)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of *tree* (module, classes, functions, attributes)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def reaches(name: str, source: str, known: set[str], is_package: bool = False) -> list[Reach]:
    """Every import *name* makes (absolute names; ``from .x import y`` counts as importing
    ``x.y`` when that is a module of *known*, else ``x``), each with how it is made, every
    module of *known* a string names (``by-name``), and every attribute it reaches
    (``Reach("watcher", line, "attribute")``)."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[Reach] = []

    def visit(node: ast.AST, how: str) -> None:
        for child in ast.iter_child_nodes(node):
            child_how = how
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                child_how = "deferred" if how == "runtime" else how
            elif isinstance(child, ast.If) and _type_checking(child):
                child_how = "type-only"
            if isinstance(child, ast.Import):
                found.extend(Reach(a.name, child.lineno, how) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.append(Reach(sub if sub in known else target, child.lineno, how))
            elif isinstance(child, ast.Attribute):
                found.append(Reach(child.attr, child.lineno, "attribute"))
            elif isinstance(child, (ast.Constant, ast.JoinedStr)) and id(child) not in docstrings:
                named = named_module(_text(child, name), known)
                if named:
                    found.append(Reach(named, child.lineno, "by-name"))
                continue  # an f-string's pieces are no names of their own
            visit(child, child_how)

    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    visit(tree, "runtime")
    return list(dict.fromkeys(found))  # ``from x import a, b``: one reach


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The flask_predict modules *name* imports, in any way."""
    return {r.target for r in reaches(name, path.read_text(), known, path.name == "__init__.py")
            if r.how != "attribute" and r.target in known and r.target != name}


def load_layers() -> dict[str, Any]:
    with LAYERS.open("rb") as file:
        return tomllib.load(file)


def part_of(module: str, parts: dict[str, list[str]]) -> str | None:
    for part, patterns in parts.items():
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in patterns):
            return part
    return None


def violations(name: str, source: str, known: set[str], layers: dict[str, Any],
               is_package: bool = False) -> list[str]:
    """What *name* (of *source*) does that a rule of *layers* forbids, one line each."""
    part = part_of(name, layers["parts"])
    found: list[str] = []
    made = reaches(name, source, known, is_package)
    for rule in layers["rules"]:
        if part not in rule["parts"]:
            continue
        for reach in made:
            if reach.how == "attribute":
                if reach.target in rule.get("never_reach", ()):
                    found.append(f"{name}:{reach.line} reaches .{reach.target}")
                continue
            if reach.how == "by-name" and any(
                    fnmatch.fnmatchcase(reach.target, pattern)
                    for pattern in rule.get("by_name_allowed", ())):
                continue
            if any(fnmatch.fnmatchcase(reach.target, pattern)
                   for pattern in rule.get("never_import", ())):
                found.append(f"{name}:{reach.line} imports {reach.target} ({reach.how})")
            own = rule.get("each_own")  # a package pattern: flask_predict.protocols.*
            if own and fnmatch.fnmatchcase(reach.target, own):
                depth = own.count(".") + 1
                mine, theirs = name.split(".")[:depth], reach.target.split(".")[:depth]
                if theirs[-1].startswith("_"):
                    continue  # a helper every protocol shares (_http, _body)
                if len(mine) == depth and mine != theirs:
                    found.append(f"{name}:{reach.line} imports another protocol's "
                                 f"{reach.target} ({reach.how})")
    return found


def test_every_module_is_in_a_part() -> None:
    parts = load_layers()["parts"]
    assert [name for name in modules() if part_of(name, parts) is None] == []


def test_no_part_reaches_where_a_rule_forbids() -> None:
    layers = load_layers()
    found = modules()
    known = set(found)
    broken = [line for name, path in sorted(found.items())
              for line in violations(name, path.read_text(), known, layers,
                                     path.name == "__init__.py")]
    assert broken == [], "\n".join(broken)


OLD_REPOSITORY_EXT = '''
from typing import TYPE_CHECKING

from . import wire

if TYPE_CHECKING:  # Flask's side of the app state; only its type is needed here
    from ...core.state import PredictState
    from ...models.watcher import Watcher


def load(state: PredictState, name: str) -> None:
    watcher = state.watcher
    watcher.unloaded.discard(name)
    watcher.poll_now(state.settings.loading.wait_seconds)
'''
"""How V2's repository extension drove the watcher before model control moved behind the
service: a type-only import and an attribute reach, both of which the rules catch."""


def test_the_rules_catch_a_front_end_driving_the_watcher() -> None:
    found = modules()
    broken = violations("flask_predict.protocols.kserve_v2.repository_ext", OLD_REPOSITORY_EXT,
                        set(found), load_layers())
    assert any("imports flask_predict.models.watcher (type-only)" in line for line in broken), broken
    assert any("reaches .watcher" in line for line in broken), broken
    assert any("reaches .unloaded" in line for line in broken), broken


def test_the_rules_catch_flask_in_the_core_and_one_protocol_in_another() -> None:
    known = set(modules())
    layers = load_layers()
    deferred = "def f():\n    from flask import request\n"
    assert violations("flask_predict.core.service", deferred, known, layers) == [
        "flask_predict.core.service:2 imports flask (deferred)"]
    across = "from ..tfserving.wire import V2_TO_DT\n"
    assert violations("flask_predict.protocols.grps.wire", across, known, layers) == [
        "flask_predict.protocols.grps.wire:1 imports another protocol's "
        "flask_predict.protocols.tfserving.wire (runtime)"]
    assert violations("flask_predict.protocols.grps.wire", "from . import yaml_text\n", known,
                      layers) == []


def test_no_import_cycles_anywhere_in_the_package() -> None:
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def flask_free_modules() -> list[str]:
    """The modules of every part a rule keeps from Flask (the core and all below it, the
    non-Flask halves of the protocols and the transport) and the face."""
    layers = load_layers()
    free = {"face"} | {part for rule in layers["rules"] if "flask" in rule.get("never_import", ())
                       for part in rule["parts"]}
    return sorted(name for name in modules() if part_of(name, layers["parts"]) in free)


def package_of(module: str) -> str:
    """The package a module stands in: its folder under the root (``flask_predict.core``
    for ``flask_predict.core.service``), a module at the root for itself (``errors``), and the
    root's ``__init__`` (the face) as ``flask_predict``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_imports(found: dict[str, Path]) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the imports between them, one line each
    (``module:line -> target (how)``); every import counts but a load by name."""
    known = set(found)
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in sorted(found.items()):
        for reach in reaches(name, path.read_text(), known, path.name == "__init__.py"):
            if reach.how in ("attribute", "by-name") or reach.target not in known:
                continue
            pair = (package_of(name), package_of(reach.target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append(
                    f"{name}:{reach.line} -> {reach.target} ({reach.how})")
    return edges


def package_rings(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """Every set of two or more packages that import each other, however far round (the
    strongly connected components of the package graph), each sorted."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    reach = {node: _reachable(graph, node) for node in graph}
    rings = {tuple(sorted(n for n in graph if n in reach[node] and node in reach[n]))
             for node in graph}
    return sorted(list(ring) for ring in rings if len(ring) > 1)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def upward_imports(edges: dict[tuple[str, str], list[str]],
                   floors: list[list[str]]) -> list[str]:
    """The imports from a package to one on a floor above it (*floors* top first), and from or
    to a package no floor names."""
    floor = {package: index for index, names in enumerate(floors) for package in names}
    found = []
    for (source, target), lines in sorted(edges.items()):
        if source not in floor or target not in floor:
            found.append(f"{source} -> {target}: a package no floor names")
        elif floor[target] < floor[source]:
            found.extend(f"up from {source} to {target}: {line}" for line in lines)
    return found


def test_no_ring_between_packages() -> None:
    edges = package_imports(modules())
    rings = package_rings(edges)
    detail = [f"{' <-> '.join(ring)}: " + "; ".join(
        line for (a, b), lines in edges.items() if a in ring and b in ring for line in lines[:2])
        for ring in rings]
    assert rings == [], "rings between packages:\n" + "\n".join(detail)


def test_no_import_between_folders_points_up() -> None:
    floors = load_layers()["floors"]
    named = [package for names in floors for package in names]
    assert len(named) == len(set(named)), "a package on two floors"
    present = {package_of(name) for name in modules()}
    assert present - set(named) == set(), "packages no floor names"
    broken = upward_imports(package_imports(modules()), floors)
    assert broken == [], "\n".join(broken)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """A package ``pkg`` under *root* made of *files* (path under ``pkg/`` -> source)."""
    for relative, source in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root / "pkg"


def test_the_package_checks_catch_a_ring_no_file_cycle_shows(tmp_path: Path) -> None:
    """Two packages importing each other through different files: no cycle between files,
    a ring between packages, and one of its two imports points up."""
    package = write_tree(tmp_path, {
        "__init__.py": "", "errors.py": "",
        "high/__init__.py": "", "high/view.py": "from ..low.base import X\n",
        "high/shared.py": "from ..errors import E\n",
        "low/__init__.py": "", "low/base.py": "X = 1\n",
        "low/helper.py": "def f():\n    from ..high.shared import Y\n"})
    found = modules(package)
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    assert graph["pkg.low.helper"] == {"pkg.high.shared"}
    edges = package_imports(found)
    assert package_rings(edges) == [["high", "low"]]
    assert upward_imports(edges, [["high"], ["low"], ["errors"]]) == [
        "up from low to high: pkg.low.helper:2 -> pkg.high.shared (deferred)"]
    assert upward_imports(edges, [["high"], ["low"]])[0] == (
        "high -> errors: a package no floor names")
    del edges[("low", "high")]
    assert package_rings(edges) == []
    assert upward_imports(edges, [["high", "low"], ["errors"]]) == []


@pytest.mark.parametrize("group", [tuple(flask_free_modules()), PLUGINS],
                         ids=["core-protocols-transport", "plugins"])
def test_flask_free_parts_and_plugins_import_with_flask_blocked(group: tuple[str, ...]) -> None:
    """A predictor sees numpy, never Flask; the gRPC side of every protocol and the core run
    without Flask (a worker of another web stack, or the gRPC server, can use them)."""
    script = textwrap.dedent(f"""
        import importlib, sys
        sys.modules["flask"] = None  # any "import flask" now raises ImportError
        sys.modules["werkzeug"] = None
        for module in {list(group)!r}:
            importlib.import_module(module)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("flask", "werkzeug")
                        and sys.modules[m] is not None)
        assert not loaded, loaded
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_import_graph_is_read() -> None:
    found = modules()
    extension = imports("flask_predict.extension", found["flask_predict.extension"], set(found))
    assert {"flask_predict.core.assembly", "flask_predict.core.state",
            "flask_predict.request.protocol_table"} <= extension
    name = "flask_predict.protocols.kserve_v2.repository_ext"
    assert "flask_predict.core.service" in imports(name, found[name], set(found))
    table = "flask_predict.request.protocol_table"
    by_name = {r.target for r in reaches(table, found[table].read_text(), set(found))
               if r.how == "by-name"}
    assert by_name == {f"flask_predict.protocols.{p}"
                       for p in ("aiplatform", "grps", "kserve_v2", "mlflow", "tfserving")}


def test_the_rules_catch_a_load_by_name() -> None:
    """A module path in a string is an import made later: the rules and the cycle check see
    it, a docstring naming a module is no load."""
    known = set(modules())
    layers = load_layers()
    source = ('"""Reads :mod:`flask_predict.protocols.grps.views`."""\n'
              'VIEWS = "flask_predict.protocols.grps.views:blueprint"\n')
    assert violations("flask_predict.core.service", source, known, layers) == [
        "flask_predict.core.service:2 imports flask_predict.protocols.grps.views (by-name)"]
    named = reaches("flask_predict.process.server",
                    'WORKER = "flask_predict.process.sync_worker.SyncWorker"\n', known)
    assert named == [Reach("flask_predict.process.sync_worker", 1, "by-name")]


def test_the_flask_side_is_still_one_import_away() -> None:
    import flask_predict

    assert flask_predict.FlaskPredict.__name__ == "FlaskPredict"
    with pytest.raises(AttributeError):
        getattr(flask_predict, "no_such_name")


PLUGIN_FACE = "flask_predict.plugin"


def plugin_sources() -> dict[str, Path]:
    """Every module of the bundled plugins and of the test suite's third-party plugin."""
    found = {}
    for folder in [*sorted((ROOT / "plugins").glob("*/flask_predict_*")),
                   ROOT / "tests" / "thirdparty_plugin" / "flask_predict_threshold"]:
        found.update(modules(folder))
    return found


def past_the_face(name: str, source: str) -> list[str]:
    """The imports of flask-predict that plugin module *name* makes other than the plugin
    face (:mod:`flask_predict.plugin`), one line each."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            targets = [node.module or ""]
        else:
            continue
        found.extend(f"{name}:{node.lineno} imports {target}" for target in targets
                     if target.split(".")[0] == "flask_predict" and target != PLUGIN_FACE)
    return found


def test_every_plugin_imports_only_the_plugin_face() -> None:
    sources = plugin_sources()
    assert {name.split(".")[0] for name in sources} >= set(PLUGINS)
    broken = [line for name, path in sorted(sources.items())
              for line in past_the_face(name, path.read_text())]
    assert broken == [], "\n".join(broken)


def test_the_plugin_check_catches_a_reach_past_the_face() -> None:
    source = ("from flask_predict.plugin import Predictor\n"
              "from flask_predict import Predictor as Root\n"
              "import flask_predict.tabular\n"
              "def load():\n"
              "    from flask_predict.models.plugins import Manifest\n"
              "from flask_predict_sklearn import manifest\n")
    assert past_the_face("flask_predict_x.predictor", source) == [
        "flask_predict_x.predictor:2 imports flask_predict",
        "flask_predict_x.predictor:3 imports flask_predict.tabular",
        "flask_predict_x.predictor:5 imports flask_predict.models.plugins"]


def test_the_plugin_face_exports_what_it_names() -> None:
    import flask_predict.plugin as face

    assert sorted(face.__all__) == sorted(set(face.__all__))
    assert [name for name in face.__all__ if not hasattr(face, name)] == []


def test_reading_every_plugin_manifest_imports_no_framework() -> None:
    """The gunicorn master checks model settings and detects plugins from the manifests:
    it must never load TensorFlow, scikit-learn or XGBoost (TensorFlow is not fork-safe)."""
    script = textwrap.dedent("""
        import sys
        from flask_predict.models.plugins import manifests
        found = manifests()
        bundled = {"sklearn", "xgboost", "tensorflow", "custom", "lightgbm", "catboost",
                   "onnx", "mlflow"}
        assert bundled <= set(found), sorted(found)
        heavy = sorted(m for m in ("tensorflow", "keras", "h5py", "sklearn", "xgboost", "joblib",
                                   "lightgbm", "catboost", "onnxruntime", "mlflow", "skops")
                       if m in sys.modules)
        assert not heavy, heavy
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_map_names_every_module() -> None:
    """docs/architecture.md is the map: every module is named there, by its path
    (``core/service.py``), or as a word of its package's row (``codecs/``: ``parsing``)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" or path.name == "__main__.py":
            continue
        folder = relative.rpartition("/")[0]
        named = f"`{relative}`" in text or (
            folder and f"`{folder.split('/')[0]}/" in text and f"`{path.stem}" in text)
        if not named:
            missing.append(relative)
    assert missing == [], missing


ARBITER_NAMES = {"arbiter", "server_", "server"}
"""What the process model calls gunicorn's ``Arbiter`` (the hooks' first argument)."""
ARBITER_SETTABLE = {"num_workers"}
"""The one arbiter attribute gunicorn means its hooks to set (its setter calls
``nworkers_changed``)."""


def arbiter_assignments(source: str) -> list[str]:
    """``<arbiter>.<attribute> = ...`` in *source*, but for the attributes gunicorn lets a
    hook set: a handler or method replaced on a live arbiter."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr not in ARBITER_SETTABLE:
                owner = target.value
                name = owner.attr if isinstance(owner, ast.Attribute) else \
                    owner.id if isinstance(owner, ast.Name) else ""
                if name in ARBITER_NAMES:
                    found.append(f"{name}.{target.attr} (line {node.lineno})")
    return found


def test_no_attribute_of_gunicorns_arbiter_is_replaced() -> None:
    replaced = {name: found for name, path in modules().items()
                if (found := arbiter_assignments(path.read_text()))}
    assert replaced == {}


def test_the_arbiter_check_catches_a_replaced_handler() -> None:
    source = "def own(arbiter, pool):\n    arbiter.handle_ttin = pool.ttin\n" \
             "    self.arbiter.reload = pool.reload\n    arbiter.num_workers = 3\n"
    assert arbiter_assignments(source) == ["arbiter.handle_ttin (line 2)",
                                           "arbiter.reload (line 3)"]
