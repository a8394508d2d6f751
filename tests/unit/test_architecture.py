"""The shape of the house: no import cycles, a Flask-free core and plugins, front ends that
go through the service only."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "flask_predict"
PLUGINS = ("flask_predict_sklearn", "flask_predict_xgboost", "flask_predict_custom",
           "flask_predict_tensorflow")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every flask_predict module *name* imports: at the top, in functions, under
    ``TYPE_CHECKING``; ``from .x import y`` counts as importing ``x.y`` when that is a
    module, else ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return {m for m in found if m in known and m != name}


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


def test_front_ends_never_reach_past_the_service() -> None:
    found = modules()
    offenders = {}
    for name, path in found.items():
        if ".protocols" in name or name.startswith("flask_predict.grpc"):
            reached = imports(name, path, set(found)) & {"flask_predict.repository",
                                                         "flask_predict.plugins"}
            text = path.read_text()
            if reached or ".predictor." in text or "state.repository" in text:
                offenders[name] = sorted(reached) or ["calls a predictor or the repository"]
    assert offenders == {}


CORE = ("flask_predict", "flask_predict.predictor", "flask_predict.codecs",
        "flask_predict.service", "flask_predict.repository", "flask_predict.warmup",
        "flask_predict.plugins", "flask_predict.artifacts", "flask_predict.served")


@pytest.mark.parametrize("group", [CORE, PLUGINS], ids=["core", "plugins"])
def test_core_and_plugins_import_with_flask_blocked(group: tuple[str, ...]) -> None:
    """A predictor sees numpy, never Flask: a worker of another web stack (or the gRPC
    server) can load every plugin."""
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
    assert {"flask_predict.service", "flask_predict.state", "flask_predict.protocols"} <= extension


def test_the_flask_side_is_still_one_import_away() -> None:
    import flask_predict

    assert flask_predict.FlaskPredict.__name__ == "FlaskPredict"
    with pytest.raises(AttributeError):
        getattr(flask_predict, "no_such_name")


def test_reading_every_plugin_manifest_imports_no_framework() -> None:
    """The gunicorn master checks model settings and detects plugins from the manifests:
    it must never load TensorFlow, scikit-learn or XGBoost (TensorFlow is not fork-safe)."""
    script = textwrap.dedent("""
        import sys
        from flask_predict.plugins import manifests
        found = manifests()
        assert {"sklearn", "xgboost", "tensorflow", "custom"} <= set(found), sorted(found)
        heavy = sorted(m for m in ("tensorflow", "sklearn", "xgboost", "joblib")
                       if m in sys.modules)
        assert not heavy, heavy
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
