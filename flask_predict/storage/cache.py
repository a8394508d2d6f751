"""The local cache of remote model paths: one mirror folder per URI, shared by every process
of the machine, that the rest of flask_predict reads as an ordinary model base path.

A mirror holds, besides its hidden bookkeeping (``.source``: the URI; ``.lock``; ``.state.json``:
what the last listing saw), one link per complete version, ``<N> -> .objects/<N>-<tag>``.
A version is downloaded into a partial folder, each object checked against the size and MD5
digest the store listed, then renamed into ``.objects`` and its link replaced in one
``rename``: a reader sees the old version folder or the new one, never a partial download.

A version is *complete* when two listings at least :data:`SETTLE_SECONDS` apart show the same
objects (names, sizes, generations or ETags), so objects uploaded one by one are taken once
the upload pauses; at start the first sync lists again after that pause. A version whose
objects change later is downloaded again and its link swapped (a folder that failed to load
is then tried again). Only the versions a model's policy serves are downloaded (a
:data:`Choice`); one cached stays until it leaves the store, the fallback of a newer one
that fails to load. Every sync holds an exclusive lock on the mirror, a POSIX record lock
that a process forked meanwhile does not inherit: at start one process lists and
downloads, the others wait and find it done; a poll that finds the lock held leaves the
mirror to its holder (:meth:`Mirror.sync`).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from typing import Any, Callable, Iterable, Iterator
from contextlib import contextmanager

from .store import NothingListed, StorageError, Store, StoredObject, verify
from .uri import RemoteUri, parse_uri

logger = logging.getLogger(__name__)

SOURCE, LOCK, STATE, OBJECTS = ".source", ".lock", ".state.json", ".objects"
SETTLE_SECONDS = 1.0
"""How long a version's listing must stay the same before it is downloaded."""
FIRST_SYNC_SECONDS = 120.0
"""How long the first sync waits for versions still being uploaded before serving the rest."""
MAX_BACKOFF_SECONDS = 300.0
"""The longest pause between two tries of a store that keeps failing."""

State = dict[str, Any]


Version = list[tuple[str, StoredObject]]
"""A version's objects, each with its path inside the version folder."""

Choice = Callable[[list[int]], Iterable[int]]
"""Which of the listed version numbers to download (a model's version policy); the rest
are never fetched."""


def group_versions(objects: list[StoredObject]) -> dict[int, Version]:
    """The versions under a prefix: its numbered folders; without any, the objects
    themselves are version 1 (what Vertex AI hands a container). Other names beside
    numbered folders are ignored, as on disk."""
    numbered: dict[int, Version] = {}
    loose: Version = []
    for item in objects:
        head, _, rest = item.name.partition("/")
        if rest and head.isdigit() and head.isascii():
            numbered.setdefault(int(head), []).append((rest, item))
        else:
            loose.append((item.name, item))
    if numbered:
        return numbered
    return {1: loose} if loose else {}


def fingerprint(items: Version) -> str:
    """One tag for a version's listing: changes when any object is added, removed or
    rewritten."""
    digest = hashlib.sha256()
    for name, item in sorted(items, key=lambda pair: pair[0]):
        digest.update(f"{name}\0{item.size}\0{item.tag}\n".encode())
    return digest.hexdigest()[:16]


class Mirror:
    """The local copy of one remote model path, in *folder*."""

    def __init__(self, folder: str, uri: RemoteUri, store: Callable[[RemoteUri], Store],
                 choose: Choice | None = None) -> None:
        self.folder = folder
        self.uri = uri
        self._store = store
        self.choose = choose
        """The versions to download among those listed; ``None``: all."""
        self.activity = "waiting for the cache's lock"
        """What the sync in progress is doing, for a line about one that takes long."""
        self._listed: list[int] = []

    @classmethod
    def at(cls, folder: str, store: Callable[[RemoteUri], Store],
           choose: Choice | None = None) -> Mirror | None:
        """The mirror in *folder*; ``None`` when *folder* is an ordinary local folder."""
        try:
            with open(os.path.join(folder, SOURCE), encoding="utf-8") as file:
                return cls(folder, parse_uri(file.read().strip()), store, choose)
        except (OSError, ValueError):
            return None

    def remote(self, version: int) -> str:
        """The URI of *version*'s folder in the store: the prefix itself for a flat one's
        version 1, else the numbered folder as the store names it (``00000002``)."""
        state = self._read_state()
        if state.get("flat") and version == 1:
            return str(self.uri)
        name = state["cached"].get(str(version), {}).get("name") or str(version)
        return f"{self.uri}/{name}"

    def create(self) -> None:
        """Make the folder (private to this user) and record its URI."""
        os.makedirs(os.path.join(self.folder, OBJECTS), mode=0o700, exist_ok=True)
        if os.stat(self.folder).st_uid != os.getuid():
            raise StorageError(f"{self.uri}: the cache folder {self.folder!r} belongs to "
                               "another user")
        source = os.path.join(self.folder, SOURCE)
        if not os.path.exists(source):
            _write(source, str(self.uri))

    # --- syncing --------------------------------------------------------------------------------

    def sync(self, first: bool, poll_seconds: float) -> None:
        """Bring the cached versions in line with the store.

        *first*: the sync before the first load (once per machine: a process that finds it
        done returns at once); a failure raises :class:`StorageError`. Otherwise a poll:
        skipped while another thread or process syncs this mirror (a store that does not
        answer holds up only that one), when another process listed less than half a poll
        ago or while backing off from a failure, which it logs (one line, never a
        credential) instead of raising; the versions cached stay.
        """
        if first and self._read_state()["listed"]:
            return  # done by a process of this machine before: no lock to wait for
        with self._locked(wait=first) as held:
            if not held:
                return
            state = self._read_state()
            now = time.time()
            if first and state["listed"]:
                return
            if not first and now < max(state["retry_at"], state["listed"] + poll_seconds / 2):
                return
            self._clean(state)
            try:
                settling = self._pass(state, strict=first)
                deadline = now + FIRST_SYNC_SECONDS
                while first and settling and time.time() < deadline:
                    time.sleep(SETTLE_SECONDS)
                    settling = self._pass(state, strict=True)
                if first and not state["cached"] and self._listed:
                    raise StorageError(f"{self.uri}: its version policy serves none of the "
                                       f"versions listed ({self._listed})")
                if first and not state["cached"]:
                    raise NothingListed(f"{self.uri}: no model under this prefix (numbered "
                                        "version folders, or the artifacts themselves)")
            except StorageError as exc:
                if first:
                    state["listed"] = 0.0  # nothing whole cached: the next start tries again
                    raise
                self._failed(state, exc, poll_seconds)
            else:
                if state["failures"]:
                    logger.info("flask_predict: %s is readable again", self.uri)
                state.update(failures=0, retry_at=0.0)
            finally:
                _write(os.path.join(self.folder, STATE), json.dumps(state))

    def _pass(self, state: State, strict: bool) -> bool:
        """List once; download the versions that settled (those :attr:`choose` takes),
        drop those that left. Whether a version to download is still settling."""
        self.activity = "listing the prefix"
        versions = group_versions(self._store(self.uri).list())
        self._listed = sorted(versions)
        state["flat"] = 1 in versions and all(name == item.name for name, item in versions[1])
        now = state["listed"] = time.time()
        cached, seen = state["cached"], state["seen"]
        wanted = set(versions if self.choose is None else self.choose(sorted(versions)))
        failure: StorageError | None = None
        for number, items in sorted(versions.items()):
            key, tag = str(number), fingerprint(items)
            if cached.get(key, {}).get("tag") == tag:
                seen.pop(key, None)
                continue
            if seen.get(key, {}).get("tag") != tag:
                seen[key] = {"tag": tag, "at": now}
                continue
            # one not served is watched too: a policy changed on reload takes it at once
            if now - seen[key]["at"] < SETTLE_SECONDS or (number not in wanted
                                                          and key not in cached):
                continue
            try:
                self._download(number, items, tag, state)
            except StorageError as exc:
                if strict:
                    raise
                failure = failure or exc
            else:
                seen.pop(key, None)
        for key in [key for key in cached if int(key) not in versions]:
            self._remove(key, state)
        for key in [key for key in seen if int(key) not in versions]:
            del seen[key]
        if failure is not None:
            raise failure
        return any(int(key) in wanted or key in cached for key in seen)

    def _download(self, number: int, items: Version, tag: str, state: State) -> None:
        """Fetch a version into a partial folder, then put it in place in one rename."""
        started = time.perf_counter()
        self.activity = f"downloading version {number}"
        objects = os.path.join(self.folder, OBJECTS)
        partial = os.path.join(objects, f".partial-{number}-{os.getpid()}")
        try:
            self._fetch(partial, number, items)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        name = f"{number}-{tag}"
        shutil.rmtree(os.path.join(objects, name), ignore_errors=True)
        os.rename(partial, os.path.join(objects, name))
        link = os.path.join(self.folder, f".link-{number}-{os.getpid()}")
        os.symlink(os.path.join(OBJECTS, name), link, target_is_directory=True)
        os.replace(link, os.path.join(self.folder, str(number)))
        old = state["cached"].get(str(number))
        head = items[0][1].name.partition("/")[0] if items and not state.get("flat") else ""
        state["cached"][str(number)] = {"tag": tag, "folder": name, "name": head}
        if old is not None and old["folder"] != name:
            shutil.rmtree(os.path.join(objects, old["folder"]), ignore_errors=True)
        logger.info("flask_predict: %s: version %d downloaded (%d objects, %d bytes) in "
                    "%.2fs", self.uri, number, len(items), sum(i.size for _, i in items),
                    time.perf_counter() - started)

    def _fetch(self, partial: str, number: int, items: Version) -> None:
        """Download a version's objects into *partial*, each checked."""
        store = self._store(self.uri)
        for name, item in items:
            parts = name.split("/")
            if any(part in ("", ".", "..") for part in parts):
                raise StorageError(f"{self.uri}/{item.name}: an object name that is no "
                                   "relative file path")
            path = os.path.join(partial, *parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as file:
                digest_known = store.download(item, file)
            verify(self.uri, item, path, digest_known)
        os.makedirs(partial, exist_ok=True)  # a version of no object at all

    def _remove(self, key: str, state: State) -> None:
        """Drop a version that left the store: its link first (the watcher then retires it),
        then its files."""
        entry = state["cached"].pop(key)
        try:
            os.unlink(os.path.join(self.folder, key))
        except FileNotFoundError:
            pass
        shutil.rmtree(os.path.join(self.folder, OBJECTS, entry["folder"]), ignore_errors=True)
        logger.info("flask_predict: %s: version %s left the store; dropped from the cache",
                    self.uri, key)

    def _failed(self, state: State, exc: StorageError, poll_seconds: float) -> None:
        """Back off and log one line: the next try after one poll, then twice as long each
        failure, up to :data:`MAX_BACKOFF_SECONDS`."""
        state["failures"] += 1
        delay = min(max(poll_seconds, 1.0) * 2 ** (state["failures"] - 1), MAX_BACKOFF_SECONDS)
        state["retry_at"] = time.time() + delay
        logger.warning("flask_predict: %s; the versions cached stay served; next try in "
                       "%.0fs", exc.message, delay)

    def _clean(self, state: State) -> None:
        """Remove what a process that died mid-sync left: partial downloads, links not yet
        renamed, object folders no version uses."""
        used = {entry["folder"] for entry in state["cached"].values()}
        objects = os.path.join(self.folder, OBJECTS)
        for name in os.listdir(objects):
            if name not in used:
                shutil.rmtree(os.path.join(objects, name), ignore_errors=True)
        for name in os.listdir(self.folder):
            if name.startswith(".link-"):
                os.unlink(os.path.join(self.folder, name))

    def _read_state(self) -> State:
        state: State = {"listed": 0.0, "cached": {}, "seen": {}, "retry_at": 0.0,
                        "failures": 0}
        try:
            with open(os.path.join(self.folder, STATE), encoding="utf-8") as file:
                state.update(json.load(file))
        except (OSError, ValueError):
            pass
        return state

    @contextmanager
    def _locked(self, wait: bool) -> Iterator[bool]:
        """This mirror's lock, exclusive across the threads of this process (a lock per
        mirror) and across the processes of the machine (a POSIX record lock on ``.lock``:
        released when its holder dies, and never inherited by a process forked meanwhile,
        as an ``flock`` would be). Without *wait*, ``False`` at once when another holds it."""
        lock = _threads.of(self.folder)
        if not lock.acquire(blocking=wait):
            yield False
            return
        try:
            fd = os.open(os.path.join(self.folder, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                try:  # retried by Python when a signal interrupts
                    fcntl.lockf(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    yield False
                else:
                    yield True
            finally:
                os.close(fd)
        finally:
            lock.release()


class _ThreadLocks:
    """One lock per mirror folder for this process's syncs; new ones in a forked child,
    where a thread of the parent may have held one at the fork."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def of(self, folder: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(folder, threading.Lock())

    def after_fork(self) -> None:
        self._guard = threading.Lock()
        self._locks = {}


_threads = _ThreadLocks()
os.register_at_fork(after_in_child=_threads.after_fork)


def _write(path: str, text: str) -> None:
    """Replace *path*'s content in one rename."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)
