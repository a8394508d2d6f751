"""Model paths in object stores (``gs://``, ``s3://``): downloaded once per machine into a
local cache before anything loads them, so the rest of flask_predict only ever sees local
version folders (see docs/storage.md).

A model's configured ``base_path`` stays what the user wrote (settings do no I/O);
:func:`local_path` names the folder its versions are read from (a remote one: its mirror),
without touching the network. Calls made where models are loaded: :func:`fetch` runs the
first sync of each remote path before the first load, each on its own thread, and says
which stores could not be read; :func:`resolve` does one, here; :func:`poll`, on every
poll of the watcher, brings each mirror in line with its store, each on its own thread
(:func:`refresh` does one, here). All download only the versions the model's policy
chooses (a *choose* function). :func:`folders` lists the folders under a remote path (a
lazy root's models).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import tempfile
import threading
from typing import Iterable

from .cache import Choice, Mirror
from .polls import poll_mirrors
from .store import StorageError, Store
from .uri import RemoteUri, is_remote, parse_uri

__all__ = ["Choice", "StorageError", "cache_root", "fetch", "folders", "is_remote",
           "local_path", "parse_uri", "poll", "refresh", "resolve", "shown"]

logger = logging.getLogger(__name__)

CACHE_VARIABLE = "FLASK_PREDICT_STORAGE_CACHE"
"""The environment variable naming the cache folder (default: under the temporary folder)."""


def cache_root() -> str:
    """The folder that holds one mirror per remote model path, shared by every process of the
    machine: ``$FLASK_PREDICT_STORAGE_CACHE``, else ``<tmp>/flask-predict-<uid>/storage``."""
    return os.environ.get(CACHE_VARIABLE) or os.path.join(
        tempfile.gettempdir(), f"flask-predict-{os.getuid()}", "storage")


def local_path(path: str) -> str:
    """The folder the versions of model path *path* are read from: *path* itself when
    local, a remote one's mirror in the cache (which may not exist yet). No I/O."""
    if not is_remote(path):
        return path
    uri = parse_uri(path)
    digest = hashlib.sha256(str(uri).encode()).hexdigest()[:12]
    leaf = uri.prefix.rsplit("/", 1)[-1] or uri.bucket
    return os.path.join(cache_root(), uri.scheme, uri.bucket, f"{leaf}-{digest}")


def resolve(path: str, choose: Choice | None = None) -> str:
    """The local base path that serves model path *path*: *path* itself when local; for a
    remote one its mirror, synced first if no process of this machine has yet (a
    :class:`StorageError` naming the URI and the cause when the store cannot be read),
    downloading the versions *choose* takes of those listed (default: all)."""
    if not is_remote(path):
        return path
    mirror = Mirror(local_path(path), parse_uri(path), open_store, choose)
    mirror.create()
    mirror.sync(first=True, poll_seconds=0)
    return mirror.folder


_first_failed: dict[str, tuple[int, str]] = {}
"""The mirror folders whose first sync failed, with the process that tried and the cause: a
process forked after it (a worker of the master that tried) leaves them to its polls."""


def fetch(paths: Iterable[tuple[str, Choice | None]]) -> dict[str, str]:
    """The first sync of every remote path of *paths* (each with its *choose*), each on its
    own thread, before the first load of its model; returns once every one has finished
    (the store's timeouts bound a store that hangs), the cause of each that could not be
    read by path. A path whose first sync failed in the process this one was forked from
    is not tried again here (its polls are :func:`poll`'s)."""
    failed: dict[str, str] = {}

    def first_sync(path: str, choose: Choice | None) -> None:
        try:
            resolve(path, choose)
        except Exception as exc:
            failed[path] = exc.message if isinstance(exc, StorageError) else \
                f"{path}: {type(exc).__name__}: {exc}"

    threads = []
    for path, choose in dict(paths).items():
        if not is_remote(path):
            continue
        tried = _first_failed.get(local_path(path))
        if tried is not None and tried[0] != os.getpid():
            failed[path] = tried[1]
            continue
        thread = threading.Thread(target=first_sync, args=(path, choose), daemon=True,
                                  name=f"flask-predict-fetch {path}")
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    _first_failed.update((local_path(path), (os.getpid(), cause))
                         for path, cause in failed.items())
    return failed


def poll(paths: Iterable[tuple[str, Choice | None]], poll_seconds: float,
         wait: float) -> None:
    """One poll of every remote base path of *paths* (each with its *choose*), each on its
    own thread, waiting up to *wait* seconds for them (:mod:`.polls`); never raises."""
    poll_mirrors([(local_path(path), choose) for path, choose in paths], poll_seconds, wait,
                 open_store)


def refresh(base_path: str, poll_seconds: float, choose: Choice | None = None) -> None:
    """One poll of the mirror in *base_path* (nothing for a local folder), here; never
    raises: a failure is logged by the mirror, with backoff, and the cached versions stay."""
    mirror = Mirror.at(local_path(base_path), open_store, choose)
    if mirror is None:
        return
    try:
        mirror.sync(first=False, poll_seconds=poll_seconds)
    except Exception:
        logger.exception("flask_predict: syncing %s failed; the versions cached stay",
                         mirror.uri)


def folders(path: str) -> list[str]:
    """The names of the folders directly under remote path *path* (a lazy root's models),
    asked of its store now; a :class:`StorageError` naming the URI and the cause when it
    cannot be listed."""
    return open_store(parse_uri(path)).folders()


def shown(text: str) -> str:
    """*text* (a path, a message) with every path inside a mirror of the cache written as
    the URI the user configured: ``<cache>/s3/models/junk-a5fe.../1/model.joblib`` (or the
    ``.objects/1-<tag>`` folder its link names) reads ``s3://models/junk/1/model.joblib``."""
    roots = {cache_root(), os.path.realpath(cache_root())}
    if not any(root in text for root in roots):
        return text
    folders = "|".join(re.escape(root) for root in sorted(roots, key=len, reverse=True))
    pattern = re.compile(rf"((?:{folders})/(?:gs|s3)/[^/\s'\"]+/[^/\s'\"]+-[0-9a-f]{{12}})"
                         r"(?:/\.objects/(\d+)-[0-9a-f]{16}|/(\d+)\b)?")

    def uri_of(found: re.Match[str]) -> str:
        version = found.group(2) or found.group(3)
        mirror = Mirror.at(found.group(1), open_store)
        if mirror is None:
            return found.group(0)
        return mirror.remote(int(version)) if version else str(mirror.uri)

    return pattern.sub(uri_of, text)


def open_store(uri: RemoteUri) -> Store:
    """The store of *uri*, its client made once per process."""
    return _store(uri, os.getpid())


@functools.lru_cache(maxsize=64)
def _store(uri: RemoteUri, pid: int) -> Store:
    if uri.scheme == "gs":
        from .gcs import GcsStore
        return GcsStore(uri)
    from .s3 import S3Store
    return S3Store(uri)
