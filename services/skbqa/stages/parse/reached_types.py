"""The answer's type from the graph, when no word of the question names it: "which *words* share a word root with
angle", "what *things* are derived from predictable", "derivationally related forms of acme".

The question's words around its one constant say the edge (read as for any relation: the edge's name and
description against the clause); the constant's own nodes say where that edge leads. When most of their neighbours
over it are of one type, the answer is of that type: the data, not a guess from the nearest texts.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.stages.parse.clause_roles import ClauseRoles
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relations import RelationChooser, RelationOption, edge_text, stems
from skbqa.stores.graph.base import Direction
from skbqa.stores.index import IndexStores

MIN_SHARE = 0.6  # of the constant's neighbours over the edge, this many must be of one type
MAX_CONSTANT_NODES = 50
# An edge said in other words than its own is taken when the meaning puts it this high and this far ahead
MEANING_MIN_SCORE = 0.4
MEANING_MARGIN = 0.25  # a name this common says nothing of where its edges lead


class ReachedTypes:
    def __init__(self, stores: IndexStores, roles: ClauseRoles) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._roles = roles

    def type_for(
        self, text: QuestionText, constants: list[Constant], chooser: RelationChooser, encoder: Encoder
    ) -> str | None:
        """The type the question's one constant reaches over the edge its clause names, or None when the question
        has not exactly one constant, its clause names no edge, or the neighbours are of several types alike."""
        if len(constants) != 1 or not 0 < constants[0].positions.size <= MAX_CONSTANT_NODES:
            return None
        constant = constants[0]
        phrase = self._roles.phrase(text, constant)
        words = stems(phrase)
        if not words:
            return None  # no words of a relation: any edge would be a guess
        options = self._options(constant, chooser)
        if not options:
            return None
        (vector,) = encoder.encode([phrase])
        ranked = chooser.rank(options, phrase, vector)
        best = ranked[0]
        hop = best.hops[0]
        if best.any_edge or not (words & stems(edge_text(hop.edge)) or clear_by_meaning(ranked)):
            return None  # the words do not single out one edge
        reached = self._stores.graph.neighbours(
            constant.positions, hop.edge.name, _direction(hop.from_constant_side)
        )
        counts = Counter(self._stores.nodes.types[reached].tolist())
        code, count = counts.most_common(1)[0]
        return self._schema.node_types[int(code)].name if count / reached.size >= MIN_SHARE else None

    def _options(self, constant: Constant, chooser: RelationChooser) -> list[RelationOption]:
        """Every one-edge reading from any of the constant's types to any type, each edge once."""
        kinds = {
            self._schema.node_types[int(c)].name for c in np.unique(self._stores.nodes.types[constant.positions])
        }
        seen: set[tuple[str, bool]] = set()
        options: list[RelationOption] = []
        for kind in sorted(kinds):
            for target in self._schema.node_type_names:
                for subject in (True, False):
                    for option in chooser.options(kind, target, constant_is_subject=subject):
                        hop = option.hops[0]
                        key = (hop.edge.name, hop.from_constant_side)
                        if len(option.hops) == 1 and key not in seen:
                            seen.add(key)
                            direction = _direction(hop.from_constant_side)
                            if self._stores.graph.degree(constant.positions, hop.edge.name, direction).sum():
                                options.append(option)  # only edges the constant's nodes have
        return options


def clear_by_meaning(ranked: list[RelationOption]) -> bool:
    """ "what *clashes with* X" for an edge described as "conflicts with": no word shared, but the meaning puts one
    edge far ahead of every other edge."""
    best = ranked[0]
    rival = next((o for o in ranked[1:] if o.hops[0].edge.name != best.hops[0].edge.name), None)
    return best.score >= MEANING_MIN_SCORE and (rival is None or best.score - rival.score >= MEANING_MARGIN)


def _direction(from_constant_side: bool) -> Direction:
    return "out" if from_constant_side else "in"
