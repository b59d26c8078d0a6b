"""Web addresses named by their site, as users do: "a homepage *on metacpan.org*", "hosted at *github.com*" → the
attribute whose values are URLs matches any address on that host (the pattern allows a "www." and any path). An
attribute is a URL column when most of its values are http(s) addresses; the host must be one its values have, so
a domain-like word that no value uses constrains nothing. Nothing here is specific to one SKB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from skbqa.query.structured import AttributeConstraint
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import humanise

MIN_URL_SHARE = 0.8  # of a column's distinct values that must be web addresses
HOST_PREPOSITIONS = frozenset({"on", "at", "from", "under", "via"})  # "hosted *on* github.com"
LABEL_WINDOW = 4  # "*homepage* is at doc.qt.io": how far before the host the attribute's name may stand
_HOST = re.compile(r"(?<![\w@/.-])((?:[a-z0-9-]+\.)+[a-z]{2,})(?![\w.-]*\w)", re.IGNORECASE)


@dataclass(frozen=True)
class UrlColumn:
    key: str
    hosts: frozenset[str]  # without "www."


def host_of(url: str) -> str:
    host = (urlsplit(url.strip()).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


class UrlHostSpotter:
    def __init__(self, catalog: AttributeCatalog, symbol: str = "y") -> None:
        self._catalog = catalog
        self._symbol = symbol
        self._columns: dict[str, list[UrlColumn]] = {}

    def columns(self, node_type: str) -> list[UrlColumn]:
        if node_type not in self._columns:
            found = []
            for column in self._catalog.columns(node_type):
                urls = [v for v in column.display if v.lower().startswith(("http://", "https://"))]
                if column.display and len(urls) >= MIN_URL_SHARE * len(column.display):
                    found.append(UrlColumn(column.key, frozenset(h for v in urls if (h := host_of(v)))))
            self._columns[node_type] = found
        return self._columns[node_type]

    def __call__(self, text: QuestionText, node_type: str) -> list[SpottedConstraint]:
        columns = self.columns(node_type)
        if not columns:
            return []
        found: list[SpottedConstraint] = []
        for match in _HOST.finditer(text.text):
            host = match.group(1).lower()
            host = host[4:] if host.startswith("www.") else host
            column = next((c for c in columns if host in c.hosts), None)
            if column is None:
                continue
            tokens = [i for i, t in enumerate(text.tokens) if match.start() <= t.start < match.end()]
            if not tokens or not text.free(tokens[0], tokens[-1] + 1):
                continue
            pattern = rf"https?://(www\.)?{re.escape(host)}([:/?#].*)?"
            constraint = AttributeConstraint(self._symbol, column.key, "=~", pattern, case_insensitive=True)
            # "a *homepage* on metacpan.org": the attribute's own name just before is part of the mention
            label = set(humanise(column.key).split())
            start = next(
                (i for i in range(max(0, tokens[0] - LABEL_WINDOW), tokens[0]) if text.tokens[i].lower in label),
                tokens[0],
            )
            start = start if text.free(start, tokens[0]) else tokens[0]
            if start == tokens[0] and (
                tokens[0] == 0 or text.tokens[tokens[0] - 1].lower not in HOST_PREPOSITIONS
            ):
                continue  # "Debian freedesktop.org maintainers": a host inside a name, no site asked for
            found.append(SpottedConstraint(constraint, start, tokens[-1] + 1))
        return found
