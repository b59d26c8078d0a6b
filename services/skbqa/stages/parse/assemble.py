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
from skbqa.stages.parse.agreeing_relations import agree_coordinated
from skbqa.stages.parse.anaphors import referring_pronoun
from skbqa.stages.parse.chain_words import (
    chain_phrases,
    content_words,
    restates_the_answer,
    says_kinds,
)
from skbqa.stages.parse.chains import ChainReader
from skbqa.stages.parse.clause_roles import COORDINATION, RELATION_WORDS, ClauseRoles
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relations import RelationChooser, RelationOption, stems
from skbqa.stages.parse.type_mentions import TypeMention, TypeVocabulary
from skbqa.stages.parse.way_nodes import way_placeholders, with_head_nouns
from skbqa.stores.index import IndexStores

TARGET = "y"
# Of a name's nodes: those whose edges say which readings the data allows (a name of many senses, "hot": 21, may
# have the edge on a sense far down its list), and those a chain through unnamed nodes is walked from.
MAX_NODES_CHECKED, CHAIN_START_NODES = 64, 5


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
        self._roles = ClauseRoles(stores, types)
        edges = self._schema.edge_types  # the words each edge's name adds to its types ("*official* in")
        self._name_stems = [stems(e.name.replace("_", " ")) - stems(f"{e.source} {e.target}") for e in edges]

    @property
    def roles(self) -> ClauseRoles:
        """How the question's clauses relate its names (shared with the reading of the answer's type)."""
        return self._roles

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
        hints = with_head_nouns(text, self._types.mentions(text))
        placeholders = way_placeholders(text, hints, self._schema.node_type_names)
        plans: list[_Plan] = []
        wanted: set[str] = set()
        pronoun = referring_pronoun(text)
        for named in constants:
            hinted = next((m.type_name for m in hints if self._roles.typed_by(text, m, named)), None)
            hinted = hinted or self._roles.hint_after(text, named)
            constant = named
            if (
                pronoun is not None
                and named.end <= pronoun
                and not content_words([w for words in self._roles.relating(text, named, hints) for w in words])
            ):
                # "The package wily: what programs are depended on by *it*?": the name's relation is stated where a
                # pronoun stands for it
                constant = replace(named, start=pronoun, end=pronoun + 1)
                pronoun = None
            subject = self._roles.constant_is_subject(text, constant, hints)
            left, right = text.clause(constant.start, constant.end, RELATION_WORDS)
            clause = self._roles.relating(text, constant, hints)  # without "the package" before "X"
            previous = plans[-1] if plans else None
            # "on X and (also) on Y": the preposition said again, or "also", still puts Y where X stands
            again = {*ALSO_WORDS, *previous.clause[0][-1:]} if previous is not None else set()
            between = self._between_names(text, previous.constant, constant) if previous is not None else []
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
                        and not self._roles.typed_by(text, m, constant)
                        and not any(other.end == m.start for other in constants)  # "the games *section* that …"
                        and not restates_the_answer(
                            text.words(max(0, m.start - 2), m.start), m.type_name == target_type
                        )
                    ),
                    key=lambda m: m.start,
                )
                if chains
                else []
            )
            by_type = self._options_by_type(chooser, constant, hinted, target_type, subject, clause)
            phrase = (
                previous.phrase if coordinated and previous is not None else self._roles.phrase(text, constant)
            )
            plan = _Plan(constant, phrase, by_type, clause, inner, left, subject, beside)
            plans.append(plan)
            if chains and (inner or content_words(clause[0])):
                spans = [(m.start - left, m.end - left) for m in inner]
                kinds = [(m.start - left, m.end - left) for m in inner if m.says_kind]
                wanted.update(chain_phrases(clause[0], clause[1], spans, kinds))
        self._borrow_from_the_next(text, plans, hints, chooser, target_type)
        self._lend_stray_relation_words(text, plans)
        # Phrases are embedded only for constants whose relation is ambiguous (several options), in one call.
        ambiguous = [i for i, plan in enumerate(plans) if sum(len(o) for _, _, o in plan.by_type) > 1]
        phrases = [plans[i].phrase or plans[i].constant.surface for i in ambiguous] + sorted(wanted)
        vectors = query.encode_with_question(phrases)
        phrase_vectors = {i: vectors[j] for j, i in enumerate(ambiguous)}
        encoded = {p: vectors[len(ambiguous) + j] for j, p in enumerate(sorted(wanted))}
        chosen_types: dict[int, str] = {}
        agreed = agree_coordinated(
            [(plan.beside, (plan.phrase, plan.subject)) for plan in plans],
            lambda i: [
                (
                    t,
                    chooser.rank(
                        o, plans[i].phrase, phrase_vectors.get(i), graph=self._stores.graph, constant_nodes=n
                    ),
                )
                for t, n, o in plans[i].by_type
            ],
        )
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
                        encoded, self._stores.graph, nodes[:CHAIN_START_NODES],
                    )  # fmt: skip
                    if found is not None and (chained is None or _longer_or_better(found, mentions, chained)):
                        chained = (found.score, type_name, found, mentions)
                if chains and chained is None and options:
                    found = reader.hierarchy(
                        plan.clause[0],
                        target_type,
                        type_name,
                        encoded,
                        self._stores.graph,
                        nodes[:CHAIN_START_NODES],
                    )
                    if found is not None:
                        chained = (found.score, type_name, found, ())
                ranked = chooser.rank(
                    options, plan.phrase, phrase_vectors.get(index), graph=self._stores.graph, constant_nodes=nodes
                )
                if ranked and (best is None or ranked[0].score > best[0]):
                    best = (ranked[0].score, type_name, ranked[0])
            best = agreed.get(index, best)  # "both X and Y": one relation for the two
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
                parsed.symbols[TARGET] = Symbol(TARGET, target_type, (plan.constant.surface,), plan.constant.sense)
                warnings.append(f"{plan.constant.surface!r} names the answer itself")
                continue
            left, right = text.clause(plan.constant.start, plan.constant.end, RELATION_WORDS)
            text.relation_tokens.update(i for i in range(left, right) if text.claimed[i] is None)
            parsed.symbols[name] = Symbol(name, type_name, (plan.constant.surface,), plan.constant.sense)
            vias = [f"m{index + 1}" + ("" if k == 0 else f"_{k + 1}") for k in range(len(option.vias))]
            for via, via_type in zip(vias, option.vias, strict=True):
                parsed.symbols[via] = Symbol(via, via_type)
            parsed.triplets.extend(option.triplets(name, TARGET, vias))
            if chained is not None and type_name == target_type and option.vias:
                # "genes that share a disease with X": X itself shares everything with itself, which no one asks
                parsed.constraints.append(self._not_the_constant(_nodes_of(plan, type_name)))
        return parsed

    def _options_by_type(
        self,
        chooser: RelationChooser,
        constant: Constant,
        hinted: str | None,
        target_type: str,
        subject: bool,
        clause: tuple[list[str], list[str]],
    ) -> list[tuple[str, np.ndarray, list[RelationOption]]]:
        """The relation options per type of the constant's nodes (only the hinted type, when a word types it)."""
        node_types = self._stores.nodes.types
        by_type = []
        for type_code in _types_in_order(constant.positions, node_types):
            type_name = self._schema.node_types[type_code].name
            if hinted is not None and type_name != hinted:
                continue
            nodes = constant.positions[node_types[constant.positions] == type_code][:MAX_NODES_CHECKED]
            by_type.append(
                (
                    type_name,
                    nodes,
                    chooser.options(
                        type_name, target_type, constant_is_subject=subject, clause=clause[0] + clause[1]
                    ),
                )
            )
        return by_type

    def _borrow_from_the_next(
        self,
        text: QuestionText,
        plans: list[_Plan],
        hints: Sequence[TypeMention],
        chooser: RelationChooser,
        target_type: str,
    ) -> None:
        """ "which do X *and* Y both depend on": a name whose clause says nothing, coordinated with the next one,
        stands in the relation the next one's clause states (the mirror of a second name taking the first's)."""
        for index in range(len(plans) - 2, -1, -1):
            plan, following = plans[index], plans[index + 1]
            between = self._between_names(text, plan.constant, following.constant)
            if not (following.beside and COORDINATION & set(between)) or content_words(
                plan.clause[0] + plan.clause[1]
            ):
                continue
            if not [w for w in content_words(following.clause[0] + following.clause[1]) if w not in COORDINATION]:
                continue
            hinted = next((m.type_name for m in hints if self._roles.typed_by(text, m, plan.constant)), None)
            plan.subject, plan.clause, plan.phrase = following.subject, following.clause, following.phrase
            plan.by_type = self._options_by_type(
                chooser, plan.constant, hinted, target_type, plan.subject, plan.clause
            )

    def _between_names(self, text: QuestionText, first: Constant, second: Constant) -> list[str]:
        """The words between two names, without articles and a type word that types the first ("the serf
        *program* and *the* docker.io tool": only "and")."""
        start = first.end
        if start < second.start and self._roles.hint_after(text, first) is not None:
            start += 1
        return [w for w in text.words(start, second.start) if w not in ("the", "a", "an")]

    def _not_the_constant(self, nodes: np.ndarray) -> AttributeConstraint:
        names = tuple(dict.fromkeys(self._stores.nodes.names[int(p)] for p in nodes))
        return AttributeConstraint(TARGET, "name", "<>", names if len(names) > 1 else names[0])

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
            and stems(t.lower) & self._roles.edge_stems
        ]
        modifier = [] if stray else self._head_modifier(text)
        for plan in plans:
            if stray and not stems(plan.phrase) & self._roles.edge_stems:
                plan.phrase = " ".join([plan.phrase, *stray]).strip()
            elif modifier and not stems(plan.phrase) & self._roles.edge_stems and not says_kinds(plan.phrase):
                plan.phrase = " ".join(
                    [plan.phrase, *modifier]
                ).strip()  # "which *official* languages does X have"

    def _head_modifier(self, text: QuestionText) -> list[str]:
        """The free word right before the answer's head noun (its first type or class word) when with the noun it
        says every word an edge's name adds to its types ("*official* languages": `official_in`; not "*clinical*
        signs" for `has_clinical_feature`)."""
        head = next((i for i, c in enumerate(text.claimed) if c in ("target", "type")), None)
        if head is None or head == 0 or text.claimed[head - 1] is not None:
            return []
        word = text.tokens[head - 1].lower
        said = stems(f"{word} {text.tokens[head].lower}")
        return [word] if any(added and added <= said and added & stems(word) for added in self._name_stems) else []


def _mention_runs(inner: Sequence[TypeMention]) -> list[tuple[TypeMention, ...]]:
    """The intermediate nodes a chain may pass through: each type word alone, and each two in the order written
    (longer chains are not read: each hop needs words of its own, and questions rarely state three)."""
    runs: list[tuple[TypeMention, ...]] = [(m,) for m in inner]
    runs += [(a, b) for i, a in enumerate(inner) for b in inner[i + 1 :] if a.end <= b.start]
    return runs


def _longer_or_better(
    found: RelationOption,
    mentions: tuple[TypeMention, ...],
    chained: tuple[float, str, RelationOption, tuple[TypeMention, ...]],
) -> bool:
    """A chain through more of the question's type words explains more of it; among equals, the better words. An
    unnamed node a chain adds on its own ("a *broader category* of X") is no type word: it does not count."""
    if len(mentions) != len(chained[3]):
        return len(mentions) > len(chained[3])
    return found.score > chained[0]


ALSO_WORDS = frozenset({"also", "too"})


def _in_parentheses(text: QuestionText, index: int) -> bool:
    before = text.text[: text.tokens[index].start]
    return before.count("(") > before.count(")")


def _types_in_order(positions: np.ndarray, node_types: np.ndarray) -> list[int]:
    """Distinct type codes of the matching nodes, in order of first appearance (names come before aliases)."""
    codes = node_types[positions]
    _, first = np.unique(codes, return_index=True)
    return [int(codes[i]) for i in sorted(first)]


def _nodes_of(plan: _Plan, type_name: str) -> np.ndarray:
    """The nodes a chain starts from, of the constant's type its relation was read for."""
    return next(nodes for name, nodes, _ in plan.by_type if name == type_name)[:CHAIN_START_NODES]
