"""Questions that ask for kinds of a named node: "what *kinds of* X …", "some *examples of* X", "which *forms of*
X". The answer is of X's type (its narrower nodes), whatever type a guess, or the kind noun itself read as a
synonym of a type ("examples" where a type's description mentions example sentences), made of it. English only.
"""

from __future__ import annotations

from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.type_mentions import noun_lemma
from skbqa.stores.nodes import NodeTable

ARTICLES = frozenset({"the", "a", "an"})
# Nouns that ask for narrower nodes of what follows them ("kinds of X"): English, not any one schema's.
KIND_NOUNS = frozenset({"kind", "type", "sort", "form", "variety", "subtype", "subclass", "category", "example"})


def type_of_kinds_asked(
    text: QuestionText, constants: list[Constant], nodes: NodeTable, type_source: str, weak: frozenset[str]
) -> str | None:
    """The named node's type when the question asks for its kinds and the answer's type came from a weak source
    (`weak`) or from the kind noun itself (taken for a type's word or synonym); else None."""
    for constant in constants:
        at = [i for i in range(max(0, constant.start - 4), constant.start) if text.tokens[i].lower not in ARTICLES]
        if (
            len(at) < 2
            or text.tokens[at[-1]].lower != "of"
            or noun_lemma(text.tokens[at[-2]].lower) not in KIND_NOUNS
        ):
            continue
        if type_source in weak or text.claimed[at[-2]] in ("target", "type"):
            codes = nodes.types[constant.positions[:1]]
            return nodes.schema.node_types[int(codes[0])].name if codes.size else None
    return None
