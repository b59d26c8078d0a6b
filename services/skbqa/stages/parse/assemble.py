"""Step 3 of the encoder parser: the constants related to the answer through the schema's edges, as triplets.

For each constant, the relation options between its type and the target type (`RelationChooser`) are ranked by
the words of its clause; a chain through an unnamed node ("genes associated with *a disease that* …", "genes
located in *a part of* X") is read by `ChainReader` first. Which end of a same-type edge the constant sits on is
decided by the clause's grammar and by which of the constant's edges exist.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import AttributeConstraint, StructuredQuery, Symbol
from skbqa.stages.parse.chain_words import INVERSE_WORDS, RELATIVE_PRONOUNS, chain_phrases, content_words
from skbqa.stages.parse.chains import ChainReader
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.relation_labels import EDGE_NAME
from skbqa.stages.parse.relations import RelationChooser, RelationOption, stems
from skbqa.stages.parse.type_mentions import PREPOSITIONS, TypeMention, TypeVocabulary
from skbqa.stores.index import IndexStores

TARGET = "y"
# Words that may end a question after the last constant without making it a subject ("… are there?").
_CLAUSE_TAIL = frozenset({"are", "is", "there", "exist", "exists", "s"})
# English words that stand for an unnamed node of any type between the answer and a constant ("packages that
# depend on *something* maintained by X"): read like a type word, each type of the schema tried in its place.
PLACEHOLDERS = frozenset({"something", "anything", "stuff", "things", "somethings", "whatever"})


@dataclass
class _Plan:
    constant: Constant
    phrase: str
    by_type: list[tuple[str, np.ndarray, list[RelationOption]]]
    clause: tuple[list[str], list[str]]  # the clause's words before and after the constant
    inner: list[TypeMention]  # type words between the answer and the constant: intermediate nodes
    left: int  # the clause's first token
    subject: bool  # whether the constant is the subject of a relation between two nodes of one type
    beside: bool = False  # "X *and* Y": of the type the name before it has, when it has that one


class QueryAssembler:
    def __init__(
        self, stores: IndexStores, types: TypeVocabulary, relations: Callable[[Encoder], RelationChooser]
    ) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._types = types
        self._relations = relations
        self._chain_reader: ChainReader | None = None
        # the stems of the edge names' own words (type names aside): what names a relation wherever it stands
        type_stems = set().union(*(stems(t.name.replace("_", " ")) for t in self._schema.node_types))
        self._edge_stems = (
            set().union(*(stems(e.name.replace("_", " ")) for e in self._schema.edge_types)) - type_stems
        )

    def _chains(self, encoder: Encoder) -> ChainReader:
        if self._chain_reader is None:
            self._chain_reader = ChainReader(self._schema, encoder)
        return self._chain_reader

    def warm(self, encoder: Encoder) -> None:
        self._chains(encoder).warm()

    def assemble(
        self,
        query: QueryContext,
        text: QuestionText,
        target_type: str | None,
        constants: list[Constant],
        warnings: list[str],
        *,
        chains: bool = True,
    ) -> StructuredQuery:
        parsed = StructuredQuery(TARGET, {TARGET: Symbol(TARGET, target_type)}, warnings=warnings)
        if not constants:
            return parsed
        if target_type is None:
            warnings.append("no target type: constants cannot be related to the answer")
            return parsed
        chooser = self._relations(query.encoder)
        reader = self._chains(query.encoder)
        hints = self._types.mentions(text)
        placeholders = [
            TypeMention(node_type.name, i, i + 1)
            for i, token in enumerate(text.tokens)
            if token.lower in PLACEHOLDERS
            and text.claimed[i] is None
            # "*anything* that conflicts with X", "is there *stuff* …": opening the question, it is the answer
            and not all(w in FUNCTION_WORDS or is_discourse_word(w) for w in text.words(0, i))
            for node_type in self._schema.node_types
        ]
        node_types = self._stores.nodes.types
        plans: list[_Plan] = []
        wanted: set[str] = set()
        pronoun = _referring_pronoun(text)
        for named in constants:
            hinted = next((m.type_name for m in hints if self._typed_by(text, m, named)), None)
            hinted = hinted or self._hint_after(text, named)
            constant = named
            if (
                pronoun is not None
                and named.end <= pronoun
                and not content_words([w for words in self._relating(text, named, hints) for w in words])
            ):
                # "The package wily: what programs are depended on by *it*?": the name's relation is stated where a
                # pronoun stands for it
                constant = replace(named, start=pronoun, end=pronoun + 1)
                pronoun = None
            subject = self._constant_is_subject(text, constant, hints)
            left, right = text.clause(constant.start, constant.end, RELATION_WORDS)
            clause = self._relating(text, constant, hints)  # without "the package" before "X"
            previous = plans[-1] if plans else None
            # "on X and (also) on Y": the preposition said again, or "also", still puts Y where X stands
            again = {*ALSO_WORDS, *previous.clause[0][-1:]} if previous is not None else set()
            between = text.words(previous.constant.end, constant.start) if previous is not None else []
            beside = (
                previous is not None
                and all(w in COORDINATION or w in again for w in between)
                and (not between or any(w in COORDINATION for w in between))
            )
            coordinated = beside and not [
                w for w in content_words(clause[0] + clause[1]) if w not in again and w not in COORDINATION
            ]
            if coordinated and previous is not None:
                # "shared by X *and* Y", "both curl and wget": the second name stands where the first does
                subject, clause = previous.subject, previous.clause
            inner = (
                sorted(
                    (
                        m
                        for m in [*hints, *placeholders]
                        if left <= m.start
                        and m.end <= constant.start
                        and not self._typed_by(text, m, constant)
                        and not any(other.end == m.start for other in constants)  # "the games *section* that …"
                    ),
                    key=lambda m: m.start,
                )
                if chains
                else []
            )
            by_type = []
            for type_code in _types_in_order(constant.positions, node_types):
                type_name = self._schema.node_types[type_code].name
                if hinted is not None and type_name != hinted:
                    continue
                nodes = constant.positions[node_types[constant.positions] == type_code][:5]
                options = chooser.options(type_name, target_type, constant_is_subject=subject)
                by_type.append((type_name, nodes, options))
            phrase = previous.phrase if coordinated and previous is not None else self._phrase(text, constant)
            plan = _Plan(constant, phrase, by_type, clause, inner, left, subject, beside)
            plans.append(plan)
            if chains and (inner or content_words(clause[0])):
                wanted.update(chain_phrases(clause[0], clause[1], [(m.start - left, m.end - left) for m in inner]))
        self._lend_stray_relation_words(text, plans)
        # Phrases are embedded only for constants whose relation is ambiguous (several options), in one call.
        ambiguous = [i for i, plan in enumerate(plans) if sum(len(o) for _, _, o in plan.by_type) > 1]
        phrases = [plans[i].phrase or plans[i].constant.surface for i in ambiguous] + sorted(wanted)
        vectors = query.encode_with_question(phrases)
        phrase_vectors = {i: vectors[j] for j, i in enumerate(ambiguous)}
        encoded = {p: vectors[len(ambiguous) + j] for j, p in enumerate(sorted(wanted))}
        chosen_types: dict[int, str] = {}
        for index, plan in enumerate(plans):
            name = f"c{index + 1}"
            best: tuple[float, str, RelationOption] | None = None
            chained: tuple[float, str, RelationOption, tuple[TypeMention, ...]] | None = None
            by_type = plan.by_type
            if plan.beside and index - 1 in chosen_types:
                # "both hypertension *and* laryngomalacia": a name of several types takes the one before it has
                by_type = [b for b in by_type if b[0] == chosen_types[index - 1]] or by_type
            for type_name, nodes, options in by_type:
                for mentions in _mention_runs(plan.inner):
                    found = reader.via_mentions(
                        plan.clause, mentions, [m.start - plan.left for m in mentions], target_type, type_name,
                        encoded, self._stores.graph, nodes,
                    )  # fmt: skip
                    if found is not None and (chained is None or _longer_or_better(found, chained)):
                        chained = (found.score, type_name, found, mentions)
                if chains and chained is None and options:
                    found = reader.hierarchy(
                        plan.clause[0], target_type, type_name, encoded, self._stores.graph, nodes
                    )
                    if found is not None:
                        chained = (found.score, type_name, found, ())
                ranked = chooser.rank(
                    options, plan.phrase, phrase_vectors.get(index), graph=self._stores.graph, constant_nodes=nodes
                )
                if ranked and (best is None or ranked[0].score > best[0]):
                    best = (ranked[0].score, type_name, ranked[0])
            if chained is not None:
                _, type_name, option, used = chained
                for mention in used:
                    text.claim(mention.start, mention.end, "via")
                best = (chained[0], type_name, option)
            if best is None:
                # Nothing in the schema links this name to the answer: keep its words for ranking instead.
                parsed.text_constraints.append(plan.constant.surface)
                warnings.append(f"{plan.constant.surface!r} cannot be related to a {target_type}: used as text")
                continue
            _, type_name, option = best
            chosen_types[index] = type_name
            if (
                chained is None
                and plan.constant.exact
                and type_name == target_type
                and option.vias
                and not chooser.links_itself(type_name)
            ):
                # "Which gene goes by the alias X?": a name of the answer's own type that no edge of that type
                # links to others is the answer itself, not the start of a detour through some other type.
                parsed.symbols[TARGET] = Symbol(TARGET, target_type, (plan.constant.surface,))
                warnings.append(f"{plan.constant.surface!r} names the answer itself")
                continue
            left, right = text.clause(plan.constant.start, plan.constant.end, RELATION_WORDS)
            text.relation_tokens.update(i for i in range(left, right) if text.claimed[i] is None)
            parsed.symbols[name] = Symbol(name, type_name, (plan.constant.surface,))
            vias = [f"m{index + 1}" + ("" if k == 0 else f"_{k + 1}") for k in range(len(option.vias))]
            for via, via_type in zip(vias, option.vias, strict=True):
                parsed.symbols[via] = Symbol(via, via_type)
            parsed.triplets.extend(option.triplets(name, TARGET, vias))
            if chained is not None and type_name == target_type and option.vias:
                # "genes that share a disease with X": X itself shares everything with itself, which no one asks
                parsed.constraints.append(self._not_the_constant(nodes_of(plan, type_name)))
        return parsed

    def _not_the_constant(self, nodes: np.ndarray) -> AttributeConstraint:
        names = tuple(dict.fromkeys(self._stores.nodes.names[int(p)] for p in nodes))
        return AttributeConstraint(TARGET, "name", "<>", names if len(names) > 1 else names[0])

    def _clause_words(self, text: QuestionText, constant: Constant) -> tuple[list[str], list[str]]:
        """The words of the constant's clause before and after it (the clause extends over free tokens only, so
        the constant's own claim does not stop it)."""
        left, right = text.clause(constant.start, constant.end, RELATION_WORDS)
        return text.words(left, constant.start), text.words(constant.end, right)

    def _lend_stray_relation_words(self, text: QuestionText, plans: list[_Plan]) -> None:
        """Words that name an edge but stand in no name's clause ("… both curl and wget to be around *(as
        recommendations)*", "*dependencies* shared by X and Y") state the relation of the names whose own clauses
        name none: they join those names' phrases."""
        clauses = {
            i
            for plan in plans
            for i in range(*text.clause(plan.constant.start, plan.constant.end, RELATION_WORDS))
        }
        # only a head noun or an aside says so plainly; a free word elsewhere mostly qualifies something else
        # ("which *clinical* abnormalities …")
        stray = [
            t.lower
            for i, t in enumerate(text.tokens)
            if i not in clauses
            and (text.claimed[i] == "target" or (text.claimed[i] is None and _in_parentheses(text, i)))
            and stems(t.lower) & self._edge_stems
        ]
        if not stray:
            return
        for plan in plans:
            if not stems(plan.phrase) & self._edge_stems:
                plan.phrase = " ".join([plan.phrase, *stray]).strip()

    def _hint_after(self, text: QuestionText, constant: Constant) -> str | None:
        """A type word right after a name types it when the name has a node of that type ("the mp3guessenc
        *package*", "the zsh *program*"); "Kabuki syndrome 1 *genes*" keeps its disease."""
        if constant.end >= len(text) or text.boundary_before(constant.end):
            return None
        after = self._types.type_at(text, constant.end)
        if after is None:
            return None
        codes = np.unique(self._stores.nodes.types[constant.positions])
        return after if self._schema.node_code(after) in codes else None

    def _relating(
        self, text: QuestionText, constant: Constant, hints: Sequence[TypeMention]
    ) -> tuple[list[str], list[str]]:
        """The clause's words that may relate the constant: without a type word that types it ("… depended on by
        *the package* X"), which is part of the name's phrase. `hints`: the question's type words."""
        before_words, after_words = self._clause_words(text, constant)
        typing = next((m for m in hints if self._typed_by(text, m, constant)), None)
        if typing is not None and constant.start - typing.start <= len(before_words):
            before_words = before_words[: len(before_words) - (constant.start - typing.start)]
        return before_words, after_words

    def _typed_by(self, text: QuestionText, mention: TypeMention, constant: Constant) -> bool:
        """A type word just before a constant that has a node of its type types it ("the gene BCS1L", "with the
        phenotype Anhidrosis"); "the diseases TSC1 is associated with" is a clause about diseases, TSC1 none."""
        code = self._schema.node_code(mention.type_name)
        return _types_the_name(text, mention, constant.start) and bool(
            (self._stores.nodes.types[constant.positions] == code).any()
        )

    def _phrase(self, text: QuestionText, constant: Constant) -> str:
        """The clause's words around the constant, without it: what the question says links it to the answer."""
        before, after = self._clause_words(text, constant)
        return " ".join(before + after)

    def _constant_is_subject(self, text: QuestionText, constant: Constant, hints: Sequence[TypeMention]) -> bool:
        """English relative clauses: the constant is the subject when a relative pronoun introduces it ("… that X
        is a kind of", "of which X is a subtype") or content words follow it in its clause ("… that have X as a
        part"); otherwise the answer is ("… that cite X", "… that are subtypes of X")."""
        before_words, after_words = self._relating(text, constant, hints)
        before = [w for w in before_words if w not in ("the", "a", "an", "both", "either")]  # "by both X and Y"
        # "X is depended on *by* what", "X gets suggested *by* which apps": the answer is the passive's agent, so
        # the source of the edge, and X its object.
        if "by" in after_words:
            verb = after_words[: after_words.index("by")]
            if any(w not in FUNCTION_WORDS and w not in _CLAUSE_TAIL for w in verb):
                return any(w in INVERSE_WORDS for w in before_words)
        # "… subtypes of X in GO": a prepositional phrase after the constant is no clause of which X is subject.
        if after_words and after_words[0] in PREPOSITIONS:
            after_words = []
        after = [w for w in after_words if w not in FUNCTION_WORDS and w not in _CLAUSE_TAIL]
        # "… regulated by X": X is the agent of a passive verb, so the source of the edge.
        passive = bool(before and before[-1] == "by")
        # Content words after it make the constant the subject only when none before it relate it to the answer
        # already ("… that X is a kind of" vs "kinds of X does GO distinguish").
        stated_before = any(w not in FUNCTION_WORDS and w not in RELATIVE_PRONOUNS for w in before)
        subject = (
            bool(before and before[-1] in RELATIVE_PRONOUNS) or (bool(after) and not stated_before) or passive
        )
        # "… that are parents of X": words for the broader end of a hierarchy turn the relation around.
        inverse = any(w in INVERSE_WORDS for w in before_words)
        return subject != inverse


def nodes_of(plan: _Plan, type_name: str) -> np.ndarray:
    """The constant's nodes of the type its relation was read for."""
    return next(nodes for name, nodes, _ in plan.by_type if name == type_name)


def _mention_runs(inner: Sequence[TypeMention]) -> list[tuple[TypeMention, ...]]:
    """The intermediate nodes a chain may pass through: each type word alone, and each two in the order written
    (longer chains are not read: each hop needs words of its own, and questions rarely state three)."""
    runs: list[tuple[TypeMention, ...]] = [(m,) for m in inner]
    runs += [(a, b) for i, a in enumerate(inner) for b in inner[i + 1 :] if a.end <= b.start]
    return runs


def _longer_or_better(
    found: RelationOption, chained: tuple[float, str, RelationOption, tuple[TypeMention, ...]]
) -> bool:
    """A chain through more of the question's type words explains more of it; among equals, the better words."""
    if len(found.vias) != len(chained[2].vias):
        return len(found.vias) > len(chained[2].vias)
    return found.score > chained[0]


# What may stand between two coordinated names ("X and Y", "X, Y or Z", "both X and Y").
COORDINATION = frozenset({"and", "or", "nor", "both", "either", "neither", "as", "well"})
ALSO_WORDS = frozenset({"also", "too"})
# Words claimed as an edge's name ("*modes of inheritance* of the diseases …") belong to the clause they relate.
RELATION_WORDS = frozenset({EDGE_NAME})
# Pronouns that stand for a node named earlier ("X: what depends on *it*?", "X genes - where do *their* products …")
REFERRING_PRONOUNS = frozenset({"it", "its", "them", "their", "this", "they"})


def _in_parentheses(text: QuestionText, index: int) -> bool:
    before = text.text[: text.tokens[index].start]
    return before.count("(") > before.count(")")


def _referring_pronoun(text: QuestionText) -> int | None:
    """Where the question's one free pronoun stands, if it has one."""
    found = [i for i, t in enumerate(text.tokens) if t.lower in REFERRING_PRONOUNS and text.claimed[i] is None]
    return found[0] if len(found) == 1 else None


def _types_the_name(text: QuestionText, mention: TypeMention, start: int) -> bool:
    """ "the *package* X": a type word right before the name starting at `start` types it; it is no node on the
    way."""
    return mention.end <= start and all(w in ("the", "a", "an") for w in text.words(mention.end, start))


def _types_in_order(positions: np.ndarray, node_types: np.ndarray) -> list[int]:
    """Distinct type codes of the matching nodes, in order of first appearance (names come before aliases)."""
    codes = node_types[positions]
    _, first = np.unique(codes, return_index=True)
    return [int(codes[i]) for i in sorted(first)]
