"""What the schema says about the text cues of a question (`cues`): whether words before a cue belong to an edge's
name ("*derivationally related* to X" names `derivationally_related`, it sets no text to match), and whether a
weak cue's words name a node the answer relates to in one way only ("papers about <field>": a relation).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skbqa.stages.parse.cues import TextCue
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relations import stems
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon


class CueReader:
    def __init__(self, stores: IndexStores, lexicon: Callable[[], NameLexicon]) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._lexicon = lexicon
        self._edge_name_stems = [stems(e.name.replace("_", " ")) for e in self._schema.edge_types]

    def says_an_edge(self, words: list[str]) -> bool:
        """Whether the words, each a word of it, are part of one edge's name ("derivationally related")."""
        said = stems(" ".join(words))
        return len(said) == len(words) and any(said <= name for name in self._edge_name_stems)

    def names_a_node(self, text: QuestionText, cue: TextCue, target_type: str | None) -> bool:
        """A weak cue's span that is exactly the name of a node the schema relates to the answer's type in one
        way only is a relation ("papers about <field>": has_topic); with several possible relations ("diseases
        related to <phenotype>": phenotype, clinical feature, inheritance…) the words stay a text constraint."""
        if not cue.weak or target_type is None:
            return False
        positions = self._lexicon().positions(cue.text, original=cue.text)
        if not positions.size:
            return False
        types = {self._schema.node_types[int(c)].name for c in np.unique(self._stores.nodes.types[positions])}
        ways = [
            e
            for e in self._schema.edge_types
            if (e.source == target_type and e.target in types) or (e.target == target_type and e.source in types)
        ]
        if len(ways) != 1:
            return False
        text.claim(cue.start, cue.body_start, "relation")
        text.release(cue.body_start, cue.end)
        return True
