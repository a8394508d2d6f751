"""URL matching that remembers the rules it found, for the packaged server's own app.

Werkzeug matches a path by walking a state machine of every rule's parts, sorting the dynamic
candidates and running a regular expression per part on every request: 9 us for an AI
Platform path over this app's 60 rules in a hot loop, 23 us inside a loaded worker, about
what a small model's prediction costs there.
:class:`MatchCachingMap` keeps what its matcher found for each (host, path, method) it has
answered, and returns a copy of it the next time. Everything Werkzeug's ``MapAdapter.match``
does around the matcher (redirects for a missing slash or a rule's defaults, 404 and 405)
still runs on every request; only the search is skipped. Misses (404, 405, redirects) are
never kept, nor paths longer than :data:`MAX_PATH`; the cache is emptied when it holds
:data:`MAX_ENTRIES` paths (a client sending a new path each time) and whenever a rule is
added.

Only for an app whose converters give the same value for the same path (Werkzeug's own and
ours do). An app that embeds the extension keeps its own URL map.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from werkzeug.routing import Map, Rule
from werkzeug.routing.matcher import StateMachineMatcher

__all__ = ["MAX_ENTRIES", "MAX_PATH", "MatchCachingMap"]

MAX_ENTRIES = 4096
"""Matched paths kept at most; past it the cache starts again empty."""
MAX_PATH = 512
"""Longer paths are matched every time, never kept: the cache holds at most a few MiB."""


class _CachingMatcher(StateMachineMatcher):
    """Werkzeug's matcher, remembering its successful matches."""

    def __init__(self, merge_slashes: bool) -> None:
        super().__init__(merge_slashes)
        self.found: dict[tuple[Any, ...], tuple[Rule, dict[str, Any]]] = {}

    def update(self) -> None:  # rules were added: Werkzeug rebuilds before the next match
        self.found.clear()
        super().update()

    def match(self, domain: str, path: str, method: str,
              websocket: bool) -> tuple[Rule, MutableMapping[str, Any]]:
        key = (domain, path, method, websocket, self.merge_slashes)
        hit = self.found.get(key)
        if hit is not None:
            return hit[0], dict(hit[1])  # the view's arguments are the request's own to change
        rule, values = super().match(domain, path, method, websocket)
        if len(path) + len(domain) <= MAX_PATH:
            if len(self.found) >= MAX_ENTRIES:
                self.found.clear()
            self.found[key] = (rule, dict(values))
        return rule, values


class MatchCachingMap(Map):
    """A Werkzeug :class:`~werkzeug.routing.Map` whose matcher remembers the rules it found
    (``Flask.url_map_class``)."""

    def __init__(self, rules: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(None, *args, **kwargs)
        matcher = getattr(self, "_matcher", None)
        if type(matcher) is StateMachineMatcher:  # a Werkzeug that matches otherwise: as is
            self._matcher = _CachingMatcher(matcher.merge_slashes)
        for rule_factory in rules or ():
            self.add(rule_factory)

    @property
    def found(self) -> dict[tuple[Any, ...], tuple[Rule, dict[str, Any]]]:
        """The matches kept, by (host, path, method, websocket, merge slashes)."""
        matcher = self._matcher
        return matcher.found if isinstance(matcher, _CachingMatcher) else {}
