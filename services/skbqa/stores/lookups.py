"""The index's name lexicon and attribute catalog, built on first use and shared by every step that reads them
(entity linking in the parse stage, candidates and hard filters in the symbols stage, SPARK and GRAPE)."""

from __future__ import annotations

import threading

from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.lexicon import NameLexicon
from skbqa.stores.nodes import NodeTable


class Lookups:
    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._lock = threading.Lock()
        self._lexicon: NameLexicon | None = None
        self._catalog: AttributeCatalog | None = None
        self.type_codes = {t.name: i for i, t in enumerate(nodes.schema.node_types)}

    def lexicon(self) -> NameLexicon:
        """Built on first use (a few seconds for 100k nodes), then shared by every request."""
        with self._lock:
            if self._lexicon is None:
                self._lexicon = NameLexicon.build(self._nodes)
            return self._lexicon

    def catalog(self) -> AttributeCatalog:
        """Attribute columns for hard filters and for spotting values in questions; built on first use."""
        with self._lock:
            if self._catalog is None:
                self._catalog = AttributeCatalog.build(self._nodes)
            return self._catalog
