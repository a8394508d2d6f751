"""The Python modules a version folder ships, importable as Google's runtimes make them.

AI Platform installs a routine's package, so ``predictor.py`` and ``preprocess.py`` are
top-level modules: ``import preprocess`` works, and a pickle naming
``preprocess.ZeroCenterer`` loads. Here several versions of one model, each shipping its own
``preprocess.py``, serve side by side in one process, so a plain name cannot mean one file
for the whole process. Each loaded version folder gets a :class:`VersionModules`:

* its modules are imported under a private package of their own
  (``flask_predict_custom.versions.v<n>_<hash>.preprocess``), so two versions never share a
  module object, and relative imports (``from . import features``) work too;
* **import statements** in those modules (at the top or inside a function, in any thread)
  resolve the folder's own names first: each module gets its own ``__import__``, through its
  ``__builtins__``;
* **names given as text** (a pickle's ``preprocess.ZeroCenterer``, ``importlib.import_module``)
  resolve while a call into the version runs: the plugin marks every call it makes into the
  routine with :meth:`VersionModules.active` (a context variable, so each thread of a worker
  has its own), and ``sys.modules["preprocess"]`` is a router that answers with the active
  version's module. Outside such a call the router finds nothing.

A name the standard library or an installed package already has is not routed (the folder's
import statements still get the folder's module). Closing a version forgets its modules, and
the routers of names no loaded version ships any more.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import keyword
import logging
import os
import sys
import threading
import types
from typing import Any, Callable, Iterator, Sequence

PACKAGE_PREFIX = "flask_predict_custom.versions"
"""Version folders are imported as ``<prefix>.v<n>_<hash>`` packages."""

logger = logging.getLogger(__name__)

_active: contextvars.ContextVar[VersionModules | None] = contextvars.ContextVar(
    "flask_predict_custom_version", default=None)
_counter = itertools.count(1)
_lock = threading.Lock()
_open: dict[str, VersionModules] = {}
"""Loaded version folders by private package name; replaced whole on change, so the import
hooks read it without the lock."""


class VersionModules:
    """The modules of one loaded version folder (see the module's docstring)."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.abspath(folder)
        digest = hashlib.sha1(self.folder.encode()).hexdigest()[:10]
        self.package = f"{PACKAGE_PREFIX}.v{next(_counter)}_{digest}"
        self.names = shipped_names(self.folder)
        """Top-level module and package names the folder ships."""
        self.routed = frozenset(name for name in self.names if not _taken(name, self.folder))
        """Of those, the names ``sys.modules`` routes to the active version."""
        for name in sorted(self.names - self.routed):
            logger.warning("%s ships a module %r, a name the environment already has: the "
                           "folder's own code imports its own %s.py, but a pickle or "
                           "importlib naming %r gets the installed one", self.folder, name,
                           name, name)
        self.builtins = dict(vars(builtins), __import__=self._import)
        """The ``__builtins__`` of the folder's modules: the same, but for ``__import__``."""
        _open_package(self)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Names given as text resolve to this version's modules inside the block."""
        token = _active.set(self)
        try:
            yield
        finally:
            _active.reset(token)

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` with this version active; an iterator it returns
        (a streaming ``predict``) is advanced with this version active too."""
        token = _active.set(self)  # not active(): this runs on every request
        try:
            result = function(*args, **kwargs)
        finally:
            _active.reset(token)
        if isinstance(result, types.GeneratorType):
            return self._advance(result)
        return result

    def _advance(self, items: Iterator[Any]) -> Iterator[Any]:
        while True:
            with self.active():
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item

    def module(self, name: str) -> types.ModuleType:
        """This version's own module *name* (a dotted name in the folder), imported on first
        use under the version's private package."""
        with self.active():
            return importlib.import_module(f"{self.package}.{name}")

    def _import(self, name: str, globals: Any = None, locals: Any = None,
                fromlist: Sequence[str] | None = (), level: int = 0) -> types.ModuleType:
        """``__import__`` for the folder's modules: its own names first, then the usual."""
        top = name.partition(".")[0]
        if level or top not in self.names:
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        with self.active():
            module = builtins.__import__(f"{self.package}.{name}", globals, locals,
                                         fromlist or (), 0)
        return module if fromlist else sys.modules[f"{self.package}.{top}"]

    def close(self) -> None:
        """Forget this version's modules, and the routers no loaded version needs."""
        global _open
        with _lock:
            _open = {k: v for k, v in _open.items() if v is not self}
            still = set().union(*[v.routed for v in _open.values()])
            for key in list(sys.modules):
                if key == self.package or key.startswith(self.package + "."):
                    del sys.modules[key]
                elif (isinstance(sys.modules.get(key), Router)
                      and key.partition(".")[0] not in still):
                    del sys.modules[key]


def shipped_names(folder: str) -> frozenset[str]:
    """The top-level modules of *folder*: ``name.py`` files and packages (folders with an
    ``__init__.py``) whose names are identifiers."""
    names = set()
    for entry in os.scandir(folder):
        name, ext = os.path.splitext(entry.name)
        if entry.is_dir():
            name, ext = entry.name, ""
            if not os.path.isfile(os.path.join(entry.path, "__init__.py")):
                continue
        elif ext != ".py":
            continue
        if name.isidentifier() and not keyword.iskeyword(name):
            names.add(name)
    return frozenset(names)


def _taken(name: str, folder: str) -> bool:
    """Whether a module *name* exists besides the folder's: imported already, in the
    standard library, or found on ``sys.path`` outside *folder*."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    present = sys.modules.get(name)
    if present is not None:
        return not isinstance(present, Router)
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:  # none, or a namespace package: a plain folder
        return False
    return not os.path.abspath(spec.origin).startswith(folder + os.sep)


class Router(types.ModuleType):
    """``sys.modules[name]`` for a module name that version folders ship: every attribute
    is the active version's own module's."""

    def __getattr__(self, attribute: str) -> Any:
        name = self.__name__
        version = _active.get()
        if version is None or name.partition(".")[0] not in version.routed:
            raise AttributeError(
                f"module {name!r} comes from a model's version folder: its names resolve "
                "only during flask-predict's calls into that version's routine")
        return getattr(version.module(name), attribute)


class _RouterLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _router(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_ROUTER_LOADER = _RouterLoader()


def _router(name: str) -> Router:
    router = Router(name, "routes to the loaded model version whose call is running")
    router.__spec__ = importlib.machinery.ModuleSpec(name, _ROUTER_LOADER)
    router.__loader__ = _ROUTER_LOADER
    return router


class _VersionSourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a folder's source file with the version's ``__builtins__``."""

    def __init__(self, fullname: str, path: str, version: VersionModules) -> None:
        super().__init__(fullname, path)
        self.version = version

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = self.version.builtins
        super().exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the modules of the private packages (loaded with their
    version's ``__builtins__``), and submodules of routed names (``pkg.sub`` as text)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(PACKAGE_PREFIX + "."):
            return _private_spec(fullname, path)
        top, dot, _ = fullname.partition(".")
        version = _active.get()
        if not dot or version is None or top not in version.routed:
            return None
        try:
            version.module(fullname)
        except ModuleNotFoundError as exc:
            if exc.name == f"{version.package}.{fullname}":
                return None
            raise
        return importlib.machinery.ModuleSpec(fullname, _ROUTER_LOADER)


def _private_spec(fullname: str, path: Sequence[str] | None
                  ) -> importlib.machinery.ModuleSpec | None:
    version = _open.get(".".join(fullname.split(".")[:3]))
    if version is None or fullname == version.package:
        return None
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    if (spec is not None and spec.origin is not None
            and type(spec.loader) is importlib.machinery.SourceFileLoader):
        spec.loader = _VersionSourceLoader(fullname, spec.origin, version)
    return spec


_FINDER = _Finder()


def _open_package(version: VersionModules) -> None:
    """Register *version*: its private package, and a router for each routed name."""
    global _open
    package = types.ModuleType(version.package, f"modules shipped in {version.folder}")
    package.__path__ = [version.folder]
    package.__spec__ = importlib.util.spec_from_loader(version.package, loader=None,
                                                       is_package=True)
    if package.__spec__ is not None:
        package.__spec__.submodule_search_locations = [version.folder]
    with _lock:
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        if PACKAGE_PREFIX not in sys.modules:
            parent = types.ModuleType(PACKAGE_PREFIX, "one package per loaded version folder")
            parent.__path__ = []
            sys.modules[PACKAGE_PREFIX] = parent
        sys.modules[version.package] = package
        for name in version.routed:
            if not isinstance(sys.modules.get(name), Router):
                sys.modules[name] = _router(name)
        _open = {**_open, version.package: version}
