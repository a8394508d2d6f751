"""Facts about model folders on disk: numbered version folders (or a flat folder of model
files, served as version 1), their stamps, which module a
pickle refers to (read from its opcodes, never unpickled), and the artifact files the bundled
plugins read (so that an error can name the file, and the plugin to install).

Names and versions from URLs never reach this module: it only walks the configured
``base_path`` of each model.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import pickle
import pickletools
import struct
import zlib

from ..errors import ConfigError, UnreadableModel, one_line


KNOWN_ARTIFACTS: dict[str, str] = {
    "saved_model.pb": "tensorflow", "saved_model.pbtxt": "tensorflow",
    "model.json": "xgboost", "model.ubj": "xgboost", "model.bst": "xgboost",
    "model.txt": "lightgbm", "model.lgb": "lightgbm", "model.cbm": "catboost",
    "model.onnx": "onnx",
    "model.joblib": "sklearn", "model.pkl": "sklearn",
}
"""Artifact file names the bundled plugins load -> the plugin (and ``flask-predict`` extra)
that loads them; a pickle of another framework's class is that framework's
(:data:`PICKLED_FRAMEWORKS`, :func:`artifact_plugin`)."""

PICKLED_FRAMEWORKS = ("xgboost", "lightgbm", "catboost")
"""Top-level modules whose pickled classes their own plugin (of the same name) loads."""


def artifact_file(folder: str) -> str:
    """The first known artifact file in *folder*, else *folder* itself: what a load error
    names."""
    for name in KNOWN_ARTIFACTS:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return folder


def artifact_plugin(folder: str) -> tuple[str, str] | None:
    """``(file name, plugin)`` for the known artifact in *folder*; ``None`` without one."""
    path = artifact_file(folder)
    if path == folder:
        return None
    name = os.path.basename(path)
    plugin = KNOWN_ARTIFACTS[name]
    if plugin == "sklearn":
        try:
            module = pickled_module(path).split(".")[0]
            if module in PICKLED_FRAMEWORKS:
                plugin = module
        except (ConfigError, OSError):
            pass
    return name, plugin


FLAT_VERSION = 1
"""The version a flat model folder is served as."""


def version_path(base_path: str, version: int) -> str:
    """The folder of *version*, named as on disk: TF Serving's exports pad the number
    (``00000123`` is version 123); a flat folder (:func:`version_folders`) is its own
    version 1."""
    plain = os.path.join(base_path, str(version))
    if os.path.isdir(plain):
        return plain
    try:
        names = os.listdir(base_path)
    except OSError:
        return plain
    for name in names:
        if name.isdigit() and name.isascii() and int(name) == version:
            return os.path.join(base_path, name)
    if version == FLAT_VERSION and _numbered(base_path) == {} and holds_files(base_path):
        return base_path
    return plain


def version_folders(base_path: str) -> dict[int, float]:
    """Numbered sub-folders of *base_path* -> modification time. Other names are ignored,
    so a version copied under a temporary name and renamed appears at once and whole.

    A folder with no numbered sub-folder that holds model files itself (as Vertex AI and
    SageMaker hand a container its model, ``/opt/ml/model``) is version 1
    (:data:`FLAT_VERSION`); whether a plugin recognises the files is the load's to say.
    """
    found = _numbered(base_path)
    if found or not holds_files(base_path):
        return found
    try:
        return {FLAT_VERSION: os.stat(base_path).st_mtime}
    except OSError:
        return {}


def holds_files(folder: str) -> bool:
    """Whether *folder* directly holds a file not hidden (a dot file is bookkeeping, as a
    mirror's ``.state.json`` or a copy's ``.1.tmp``)."""
    try:
        with os.scandir(folder) as entries:
            return any(not entry.name.startswith(".") and entry.is_file() for entry in entries)
    except OSError:
        return False


def _numbered(base_path: str) -> dict[int, float]:
    found: dict[int, float] = {}
    try:
        entries = list(os.scandir(base_path))
    except OSError:
        return found
    for entry in entries:
        if entry.name.isdigit() and entry.name.isascii() and entry.is_dir():
            try:
                found[int(entry.name)] = entry.stat().st_mtime
            except OSError:
                continue
    return found


def tree_stamp(folder: str) -> float:
    """The latest modification time of *folder* and everything under it (0.0 if gone).

    Writing or adding any file changes it, so a version that failed to load because it
    was still being copied is tried again once the copy goes on.
    """
    latest = 0.0
    for root, dirs, files in os.walk(folder):
        for name in (root, *(os.path.join(root, f) for f in files)):
            try:
                latest = max(latest, os.stat(name).st_mtime)
            except OSError:
                continue
    return latest


def pickled_module(path: str) -> str:
    """The module of the first class referenced in a (possibly compressed) pickle file.

    Only the opcodes are read (the first MiB is plenty), nothing is unpickled.

    :raises UnreadableModel: the file is empty, or its opcodes are not a pickle's.
    """
    try:
        with _open_maybe_compressed(path) as stream:
            head = stream.read(1 << 20)
            strings: list[str] = []
            for opcode, arg, _ in pickletools.genops(head):
                if opcode.name in ("GLOBAL", "INST") and isinstance(arg, str):
                    return arg.split(" ")[0]
                if opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                    return strings[-2]
                if isinstance(arg, str):
                    strings.append(arg)
    except Exception as exc:
        raise unreadable_pickle(path, exc) from None
    raise ConfigError(f"{path!r} holds no class reference")


UNPICKLING_ERRORS = (pickle.UnpicklingError, EOFError, struct.error, IndexError, KeyError,
                     ValueError, TypeError, zlib.error, lzma.LZMAError, OSError)
"""What unpickling (or joblib's loading) raises on bytes that are not a whole pickle. Not
``ImportError`` or ``AttributeError``: a readable pickle naming code that is not installed."""


def unreadable_pickle(path: str, exc: BaseException) -> UnreadableModel:
    """Why the pickle or joblib file *path* cannot be read (*exc*: what reading it raised)."""
    if empty(path):
        return UnreadableModel("the file is empty")
    return UnreadableModel(f"cannot unpickle it (cut short, corrupt, or written by another "
                           f"version): {type(exc).__name__}: {one_line(str(exc))}")


def empty(path: str) -> bool:
    """Whether *path* is an empty file."""
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


def _open_maybe_compressed(path: str) -> io.BufferedIOBase:
    """The pickle stream of *path*: plain, or compressed as joblib writes it."""
    with open(path, "rb") as raw:
        head = raw.read(6)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(path, "rb")
    if head.startswith(b"BZh"):
        return bz2.open(path, "rb")
    if head.startswith(b"\xfd7zXZ") or head.startswith(b"\x5d\x00\x00"):
        return lzma.open(path, "rb")
    if head[:1] == b"x":  # joblib's zlib format
        with open(path, "rb") as raw:
            return io.BytesIO(zlib.decompress(raw.read()))
    if head.startswith(b"ZF"):  # joblib < 0.10 zlib format with a length header
        with open(path, "rb") as raw:
            raw.read(2 + 16)
            return io.BytesIO(zlib.decompress(raw.read()))
    return open(path, "rb")


def files_bytes(folder: str) -> int:
    """The size of the files under *folder*."""
    total = 0
    for parent, _, names in os.walk(folder):
        for file in names:
            try:
                total += os.stat(os.path.join(parent, file)).st_size
            except OSError:
                continue
    return total
