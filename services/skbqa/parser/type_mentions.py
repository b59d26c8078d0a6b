"""Node-type words in a question: the target type (step 1 without an LLM) and type hints before constants.

Forms come from the schema alone: the type name with `_`/`-` as spaces, each '/'-separated part on its own
("gene/protein" → "gene", "protein"), and English plurals of the last word. The first type mention in a question
is its target ("Which *genes* …", "Name the *diseases* …"); a mention right before a constant types the constant
("… involve the *gene* BCS1L").
"""

from __future__ import annotations

from dataclasses import dataclass

from skbqa.parser.question_text import QuestionText
from skbqa.skb.schema import Schema


def plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def type_forms(type_name: str) -> list[tuple[str, ...]]:
    """Word sequences that mention a node type, longest first."""
    forms: set[tuple[str, ...]] = set()
    parts = [type_name, *type_name.split("/")] if "/" in type_name else [type_name]
    for part in parts:
        words = tuple(w for w in part.replace("_", " ").replace("-", " ").lower().split() if w)
        if not words:
            continue
        forms.add(words)
        forms.add((*words[:-1], plural(words[-1])))
    return sorted(forms, key=len, reverse=True)


@dataclass(frozen=True)
class TypeMention:
    type_name: str
    start: int
    end: int


class TypeVocabulary:
    def __init__(self, schema: Schema) -> None:
        self._forms: list[tuple[tuple[str, ...], str]] = sorted(
            ((form, t.name) for t in schema.node_types for form in type_forms(t.name)),
            key=lambda item: len(item[0]),
            reverse=True,
        )
        self._form_set = {form for form, _ in self._forms}

    def is_form(self, words: list[str]) -> bool:
        """Whether the words are exactly a type mention ("gene", "biological processes")."""
        return tuple(words) in self._form_set

    def occurs_in(self, words: list[str]) -> bool:
        """Whether a type mention occurs anywhere in the words."""
        return any(
            tuple(words[i : i + len(f)]) == f for f, _ in self._forms for i in range(len(words) - len(f) + 1)
        )

    def mentions(self, text: QuestionText) -> list[TypeMention]:
        """Every non-overlapping type mention in free tokens, left to right, longest form first."""
        found: list[TypeMention] = []
        words = [t.lower for t in text.tokens]
        i = 0
        while i < len(words):
            hit = None
            if text.claimed[i] is None:
                for form, type_name in self._forms:
                    end = i + len(form)
                    if tuple(words[i:end]) == form and text.free(i, end):
                        hit = TypeMention(type_name, i, end)
                        break
            if hit:
                found.append(hit)
                i = hit.end
            else:
                i += 1
        return found
