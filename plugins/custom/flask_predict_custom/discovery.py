"""Finding a prediction routine's class in a version folder by reading its source, never
running it: what auto-detection (in the gunicorn master) and a model without a ``class``
setting rely on.

A class counts when the folder's top-level ``.py`` files define it with the methods of one
of Google's contracts:

* AI Platform's ``Predictor`` interface: ``from_path`` and ``predict``;
* Vertex AI's CPR ``Predictor``: ``load`` and at least one of ``preprocess``, ``predict``,
  ``postprocess``, or any class derived from a class imported from
  ``google.cloud.aiplatform.prediction`` (Google's ``Predictor``, ``SklearnPredictor``...).
"""

from __future__ import annotations

import ast
import os

MAX_SOURCE_BYTES = 1 << 20
"""Larger files are not read (a routine's module is a few kilobytes)."""

AIPLATFORM_METHODS = frozenset({"from_path", "predict"})
VERTEX_STEPS = frozenset({"preprocess", "predict", "postprocess"})
VERTEX_PACKAGE = "google.cloud.aiplatform.prediction"


def routine_classes(folder: str) -> list[str]:
    """``module.Class`` for each routine class defined in *folder*'s top-level files."""
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        module, ext = os.path.splitext(entry.name)
        if ext != ".py" or not module.isidentifier() or not entry.is_file():
            continue
        if entry.stat().st_size > MAX_SOURCE_BYTES:
            continue
        try:
            with open(entry.path, "rb") as source:
                tree = ast.parse(source.read(), entry.path)
        except (SyntaxError, ValueError, OSError):
            continue
        found += [f"{module}.{name}" for name in _routines(tree)]
    return found


def _routines(tree: ast.Module) -> list[str]:
    vertex_bases = _names_from(tree, VERTEX_PACKAGE)
    names = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {item.name for item in node.body
                   if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        bases = {_base_name(base) for base in node.bases}
        if (AIPLATFORM_METHODS <= methods
                or ("load" in methods and methods & VERTEX_STEPS)
                or bases & vertex_bases):
            names.append(node.name)
    return names


def _names_from(tree: ast.Module, package: str) -> set[str]:
    """Names bound by ``from <package>... import X`` or ``import <package>... as y``."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
            for alias in node.names:  # a class, or a module used as `alias.Class`
                names.update({alias.asname or alias.name, (alias.asname or alias.name) + "."})
        elif isinstance(node, ast.Import):
            names.update(alias.asname + "." for alias in node.names
                         if alias.asname and alias.name.startswith(package))
    return names


def _base_name(base: ast.expr) -> str:
    """``Predictor`` for ``Predictor``; ``p.`` for ``p.Predictor`` (a module alias)."""
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        return base.value.id + "."
    return ""
