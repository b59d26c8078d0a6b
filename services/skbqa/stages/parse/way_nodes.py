"""Words that stand for a node on the way between a name and the answer, beyond the schema's type words: a type
word's own head noun ("a *noun sense* that …") and a noun introduced as one of a kind ("*any binary* built from
X")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from skbqa.stages.parse.chain_words import PLACEHOLDERS, RELATIVE_PRONOUNS
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.spelling import reads_as_participle
from skbqa.stages.parse.type_mentions import TypeMention, noun_lemma

UNNAMED_INTRODUCERS = frozenset({"any", "some", "a", "an"})  # "… enhancing *any* binary built from X"
WAY_CLAIM = "way"  # a name's words that head a relative clause about another name (`relative_heads`)


def way_placeholders(
    text: QuestionText, hints: Sequence[TypeMention], type_names: Sequence[str]
) -> list[TypeMention]:
    """Nodes on the way no type word names, one mention per type: placeholder words ("*something* that X
    enhances"), unnamed nouns (`unnamed_noun`) and the heads of relative clauses (`relative_heads`)."""
    spans = [
        (i, i + 1)
        for i, token in enumerate(text.tokens)
        if (token.lower in PLACEHOLDERS or unnamed_noun(text, i, hints))
        and text.claimed[i] is None
        # "*anything* that conflicts with X", "is there *stuff* …": opening the question, it is the answer
        and not all(w in FUNCTION_WORDS or is_discourse_word(w) for w in text.words(0, i))
    ]
    heads = text.claimed_runs(WAY_CLAIM)
    return [
        TypeMention(name, start, end, says_kind=(start, end) in heads)
        for start, end in sorted(spans + heads)
        for name in type_names
    ]


def with_head_nouns(text: QuestionText, mentions: list[TypeMention]) -> list[TypeMention]:
    """ "a *noun sense* that …", "an *adjective term* which …": a type word before a free noun that what follows
    qualifies only modifies it; the node the noun stands for is of that type, and the noun is no word of a clause."""
    out: list[TypeMention] = []
    for k, mention in enumerate(mentions):
        i = mention.end
        if (
            i + 1 < len(text)
            and text.claimed[i] is None
            and not text.boundary_before(i)
            and not text.boundary_before(i + 1)
            and not any(m.start == i for m in mentions[k + 1 :])
            and noun_lemma(text.tokens[i].lower) is not None
            and _qualified(text.tokens[i + 1].lower)
        ):
            mention = replace(mention, end=i + 1)
        out.append(mention)
    return out


def _qualified(following: str) -> bool:
    return reads_as_participle(following) or following in RELATIVE_PRONOUNS


def unnamed_noun(text: QuestionText, i: int, hints: Sequence[TypeMention]) -> bool:
    """ "packages enhancing *any binary* built from X": a noun that is no type word, introduced as one of a kind and
    qualified by what follows, stands for an unnamed node, of whichever type the chain fits best."""
    if i == 0 or i + 1 >= len(text) or text.boundary_before(i + 1) or any(m.start <= i < m.end for m in hints):
        return False
    word, following = text.tokens[i].lower, text.tokens[i + 1].lower
    return (
        text.tokens[i - 1].lower in UNNAMED_INTRODUCERS and noun_lemma(word) is not None and _qualified(following)
    )
