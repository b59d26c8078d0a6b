#!/usr/bin/env python3
"""Held-out question generator for the WordNet SKB bundle (see build_skb.py).

Usage:
    gen_questions.py BUNDLE_DIR OUT.jsonl [--seed S] [--n 200] [--style template|human]

Each question starts from a real answer node, is described by a constraint spec (stored in
meta.spec) and gets its gold answers from the graph by ``eval_spec``.  Wording comes from a
hand-written phrase lexicon per edge type and direction (below), in one fixed form
(``template``) or picked at random from many frames, synonyms and surface variations
(``human``).

Families (meta.family): one-hop, two-constants, attr-relation, text-cue, two-hop, two-hop-plus.
Standard library only.
"""

from __future__ import annotations

import math
import os
import random
import re
import sys
from typing import ClassVar

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import spec_language as sl
from spec_language import eval_spec as eval_spec
from spec_language import join_and, plural

NAME, DEFAULT_N, MAX_TRIES = "wordnet", 200, 40000
FAMILIES = ["one-hop", "two-constants", "attr-relation", "text-cue", "two-hop", "two-hop-plus"]
MIN_ANS, MAX_ANS = 1, 20

N, V, A, R, D = "noun_concept", "verb_concept", "adjective_concept", "adverb_concept", "lexical_domain"

# --------------------------------------------------------------------------------------
# knowledge base: the shared spec language (spec_language.py), constants resolved by their
# WordNet id, plus the 'has_word' operator
# --------------------------------------------------------------------------------------


def lemma_list(node):
    return [w.strip().lower() for w in node["attrs"].get("lemmas", "").split(";") if w.strip()]


def has_word(node, cond) -> bool:
    """{"attr", "op": "has_word", "value"}: value is one of the node's lemmas, ignoring case."""
    return cond["value"].lower() in lemma_list(node)


class KB(sl.KB):
    id_attr = "wordnet_id"
    attr_ops: ClassVar = {"has_word": has_word}


# --------------------------------------------------------------------------------------
# phrase lexicon: (edge, dir) -> readings with the described node as subject.
#   pl: plural verb phrases, sg: singular ones, obj: (relative, question) readings in which
#   the constant is the subject ("{c} is a kind of" / "is {c} a kind of"), np: noun phrases
#   naming the described nodes.  The first entry of each list is the template wording.
# --------------------------------------------------------------------------------------
LEX = {
    ("kind_of", "out"): {
        "pl": ["are kinds of {c}", "are types of {c}", "are a kind of {c}", "are subtypes of {c}"],
        "sg": ["is a kind of {c}", "is a type of {c}"],
        "obj": [],
        "np": ["kinds of {c}", "types of {c}", "subtypes of {c}", "hyponyms of {c}"],
    },
    ("kind_of", "in"): {
        "pl": ["are hypernyms of {c}", "are broader categories of {c}", "are more general terms for {c}"],
        "sg": ["is a hypernym of {c}", "is a broader category of {c}"],
        "obj": [("{c} is a kind of", "is {c} a kind of"), ("{c} is a type of", "is {c} a type of")],
        "np": ["hypernyms of {c}", "broader categories of {c}", "more general terms for {c}"],
    },
    ("kind_of", "out", V): {
        "pl": [
            "are ways to {c}",
            "are specific ways to {c}",
            "are troponyms of {c}",
            "are particular ways to {c}",
        ],
        "sg": ["is a way to {c}", "is a specific way to {c}"],
        "obj": [],
        "np": ["ways to {c}", "troponyms of {c}", "specific ways to {c}"],
    },
    ("kind_of", "in", V): {
        "pl": ["are hypernyms of {c}", "are more general verbs than {c}"],
        "sg": ["is a hypernym of {c}", "is a more general verb than {c}"],
        "obj": [("{c} is a way to", "is {c} a way to"), ("{c} is a kind of", "is {c} a kind of")],
        "np": ["hypernyms of {c}", "more general verbs for {c}"],
    },
    ("instance_of", "out"): {
        "pl": ["are instances of {c}", "are examples of {c}", "are specific instances of {c}"],
        "sg": ["is an instance of {c}", "is an example of {c}"],
        "obj": [],
        "np": ["instances of {c}", "examples of {c}", "named instances of {c}"],
    },
    ("instance_of", "in"): {
        "pl": ["have {c} as an instance", "are classes that have {c} as an instance"],
        "sg": ["has {c} as an instance"],
        "obj": [("{c} is an instance of", "is {c} an instance of")],
        "np": ["the classes {c} is an instance of", "what {c} is an instance of"],
    },
    ("part_of", "out"): {
        "pl": ["are parts of {c}", "are components of {c}", "are part of {c}"],
        "sg": ["is a part of {c}", "is part of {c}"],
        "obj": [],
        "np": ["parts of {c}", "components of {c}", "pieces of {c}", "part meronyms of {c}"],
    },
    ("part_of", "in"): {
        "pl": ["have {c} as a part", "contain {c} as a part", "include {c} as a part"],
        "sg": ["has {c} as a part", "includes {c} as a part"],
        "obj": [("{c} is a part of", "is {c} a part of"), ("{c} is part of", "is {c} part of")],
        "np": ["wholes that {c} is part of", "things {c} is a part of"],
    },
    ("member_of", "out"): {
        "pl": ["are members of {c}", "belong to {c} as members"],
        "sg": ["is a member of {c}"],
        "obj": [],
        "np": ["members of {c}", "member meronyms of {c}"],
    },
    ("member_of", "in"): {
        "pl": ["have {c} as a member", "are groups that include {c}", "count {c} among their members"],
        "sg": ["has {c} as a member"],
        "obj": [("{c} is a member of", "is {c} a member of"), ("{c} belongs to", "does {c} belong to")],
        "np": ["groups that {c} is a member of", "groups {c} belongs to"],
    },
    ("substance_of", "out"): {
        "pl": ["are substances of {c}", "are materials of {c}", "are substances that make up {c}"],
        "sg": ["is a substance of {c}", "is a material of {c}"],
        "obj": [("{c} is made of", "is {c} made of"), ("{c} contains", "does {c} contain")],
        "np": ["substances of {c}", "materials {c} is made of", "what {c} is made of"],
    },
    ("substance_of", "in"): {
        "pl": ["are made of {c}", "contain {c}", "are made from {c}"],
        "sg": ["is made of {c}", "contains {c}"],
        "obj": [("{c} is a substance of", "is {c} a substance of")],
        "np": ["things made of {c}", "things made from {c}"],
    },
    ("antonym_of", "*"): {
        "pl": ["are antonyms of {c}", "are opposites of {c}", "mean the opposite of {c}"],
        "sg": ["is an antonym of {c}", "is the opposite of {c}"],
        "obj": [],
        "np": ["antonyms of {c}", "opposites of {c}"],
    },
    ("similar_to", "*"): {
        "pl": ["are similar to {c}", "are similar in meaning to {c}", "mean nearly the same as {c}"],
        "sg": ["is similar to {c}", "is similar in meaning to {c}"],
        "obj": [],
        "np": ["adjectives similar to {c}", "near-synonyms of {c}", "words similar to {c}"],
    },
    ("also_see", "*"): {
        "pl": ["are see-also entries of {c}", "are cross-referenced with {c}", "are listed as 'see also' for {c}"],
        "sg": ["is a see-also entry of {c}", "is cross-referenced with {c}"],
        "obj": [],
        "np": ["see-also entries of {c}", "cross-references of {c}"],
    },
    ("verb_group", "*"): {
        "pl": ["are in a verb group with {c}", "are grouped with {c} as very close senses"],
        "sg": ["is in a verb group with {c}"],
        "obj": [],
        "np": ["senses grouped with {c}", "verb-group companions of {c}"],
    },
    ("entails", "out"): {
        "pl": ["entail {c}", "imply {c}", "necessarily involve {c}"],
        "sg": ["entails {c}", "implies {c}"],
        "obj": [],
        "np": [],
    },
    ("entails", "in"): {
        "pl": ["are entailed by {c}", "are implied by {c}"],
        "sg": ["is entailed by {c}", "is implied by {c}"],
        "obj": [("{c} entails", "does {c} entail"), ("{c} implies", "does {c} imply")],
        "np": ["what {c} entails", "entailments of {c}"],
    },
    ("causes", "out"): {
        "pl": ["cause {c}", "bring about {c}", "are causes of {c}"],
        "sg": ["causes {c}", "brings about {c}"],
        "obj": [],
        "np": ["causes of {c}"],
    },
    ("causes", "in"): {
        "pl": ["are caused by {c}", "are results of {c}", "are effects of {c}"],
        "sg": ["is caused by {c}", "is an effect of {c}"],
        "obj": [("{c} causes", "does {c} cause"), ("{c} brings about", "does {c} bring about")],
        "np": ["effects of {c}", "what {c} causes"],
    },
    ("value_of", "out"): {
        "pl": ["are values of {c}", "describe {c}", "express a value of {c}"],
        "sg": ["is a value of {c}", "describes {c}"],
        "obj": [],
        "np": ["values of {c}", "adjectives describing {c}"],
    },
    ("value_of", "in"): {
        "pl": ["are attributes described by {c}", "are the attributes {c} is a value of"],
        "sg": ["is an attribute described by {c}"],
        "obj": [("{c} is a value of", "is {c} a value of"), ("{c} describes", "does {c} describe")],
        "np": ["the attributes {c} describes", "attributes that {c} expresses"],
    },
    ("derivationally_related", "*"): {
        "pl": ["are derivationally related to {c}", "share a word root with {c}", "are related word forms of {c}"],
        "sg": ["is derivationally related to {c}", "shares a word root with {c}"],
        "obj": [],
        "np": ["derivationally related forms of {c}", "word forms related to {c}", "derivatives of {c}"],
    },
    ("pertains_to", "out"): {
        "pl": ["pertain to {c}", "relate to {c}", "mean 'of or relating to {c}'"],
        "sg": ["pertains to {c}", "relates to {c}"],
        "obj": [],
        "np": ["relational adjectives for {c}", "adjectives pertaining to {c}"],
    },
    ("pertains_to", "in"): {
        "pl": ["are pertained to by {c}", "are what {c} relates to"],
        "sg": ["is pertained to by {c}"],
        "obj": [("{c} pertains to", "does {c} pertain to"), ("{c} relates to", "does {c} relate to")],
        "np": ["what {c} pertains to"],
    },
    ("derived_from", "out"): {
        "pl": ["are derived from {c}", "are formed from {c}", "are adverbs formed from {c}"],
        "sg": ["is derived from {c}", "is formed from {c}"],
        "obj": [],
        "np": ["adverbs derived from {c}", "adverbs formed from {c}"],
    },
    ("derived_from", "in"): {
        "pl": ["are the base of {c}", "are the adjectives {c} comes from"],
        "sg": ["is the base of {c}"],
        "obj": [("{c} is derived from", "is {c} derived from"), ("{c} comes from", "does {c} come from")],
        "np": ["the base adjectives of {c}"],
    },
    ("participle_of", "out"): {
        "pl": ["are participles of {c}", "are participial forms of {c}"],
        "sg": ["is a participle of {c}"],
        "obj": [],
        "np": ["participles of {c}"],
    },
    ("participle_of", "in"): {
        "pl": ["have {c} as a participle"],
        "sg": ["has {c} as a participle"],
        "obj": [("{c} is a participle of", "is {c} a participle of")],
        "np": ["the verbs {c} is a participle of"],
    },
    ("topic_domain", "out"): {
        "pl": ["belong to the topic {c}", "are terms of {c}", "are used in the field of {c}"],
        "sg": ["belongs to the topic {c}", "is a term of {c}"],
        "obj": [],
        "np": ["terms of {c}", "{c} terms", "{c} vocabulary", "{c} jargon"],
    },
    ("topic_domain", "in"): {
        "pl": ["are topics of {c}", "are the fields {c} belongs to"],
        "sg": ["is the topic of {c}", "is the field of {c}"],
        "obj": [("{c} belongs to", "does {c} belong to"), ("{c} is a term of", "is {c} a term of")],
        "np": ["the topic {c} belongs to", "the field of {c}"],
    },
    ("region_domain", "out"): {
        "pl": ["are used in {c}", "are regional terms of {c}", "belong to the region {c}"],
        "sg": ["is used in {c}", "is a regional term of {c}"],
        "obj": [],
        "np": ["terms used in {c}", "regionalisms of {c}"],
    },
    ("region_domain", "in"): {
        "pl": ["are regions where {c} is used"],
        "sg": ["is the region of {c}"],
        "obj": [("{c} is used in", "is {c} used in"), ("{c} is specific to", "is {c} specific to")],
        "np": ["the region of {c}"],
    },
    ("usage_domain", "out"): {
        "pl": ["are marked as {c}", "are labelled {c}", "have the usage label {c}"],
        "sg": ["is marked as {c}", "is labelled {c}"],
        "obj": [],
        "np": ["words marked {c}", "terms labelled {c}"],
    },
    ("usage_domain", "in"): {
        "pl": ["are usage labels of {c}"],
        "sg": ["is a usage label of {c}"],
        "obj": [("{c} is marked as", "is {c} marked as")],
        "np": ["the usage label of {c}"],
    },
    ("in_lexical_domain", "out"): {
        "pl": ["are in the lexical domain {c}", "are filed under {c}", "belong to {c}", "are listed in {c}"],
        "sg": ["is in the lexical domain {c}", "is filed under {c}"],
        "obj": [],
        "np": ["members of {c}", "entries of {c}"],
    },
    ("in_lexical_domain", "in"): {
        "pl": ["contain {c}", "include {c}"],
        "sg": ["contains {c}", "includes {c}"],
        "obj": [("{c} is filed under", "is {c} filed under"), ("{c} belongs to", "does {c} belong to")],
        "np": ["the lexical domain of {c}", "the domain {c} is filed under"],
    },
}


def lex_for(edge, d, subj_type):
    return LEX.get((edge, d, subj_type)) or LEX.get((edge, d)) or LEX[(edge, "*")]


TYPE_WORDS = {
    # template noun, human synonyms
    N: ("noun concept", ["noun", "word", "term", "noun sense", "concept", "thing"]),
    V: ("verb concept", ["verb", "verb sense", "action", "word"]),
    A: ("adjective concept", ["adjective", "adjective sense", "word", "describing word"]),
    R: ("adverb concept", ["adverb", "adverb sense", "word"]),
    D: ("lexical domain", ["lexical domain", "semantic field", "lexicographer file", "category"]),
}
POS_WORD = {N: "noun", V: "verb", A: "adjective", R: "adverb", D: "lexical domain"}


def gloss_hint(text: str, words=7) -> str:
    d = text.split(";")[0].strip().strip('"')
    w = d.split()
    return " ".join(w[:words]) + (" ..." if len(w) > words else "")


def strip_are(vp):
    return vp[4:] if vp.startswith("are ") else None


OPENERS = [*sl.OPENERS, "Name"]
WHICH = ["Which", "What", "which", "what"]


class Realizer:
    def __init__(self, kb: KB, rng: random.Random, style: str):
        self.kb, self.rng, self.style = kb, rng, style
        self.human = style == "human"

    def pick(self, opts):
        return opts[0] if not self.human else self.rng.choice(opts)

    # ---- nouns for types
    def tnoun(self, t, pl=True):
        base, syn = TYPE_WORDS[t]
        noun = base
        if self.human and self.rng.random() < 0.7:
            noun = self.rng.choice(syn)
        return plural(noun) if pl else noun

    # ---- constants
    def const_np(self, cid):
        kb, r = self.kb, self.rng
        t, name = kb.type(cid), kb.name(cid)
        if t == D:
            if not self.human:
                return name
            return r.choice([name, name, f"the {name} domain", f"'{name}'"])
        same = kb.by_name[(t, name)]
        other_pos = len(kb.name_types[name.lower()] - {t, D}) > 0
        s = name
        if (self.human and r.random() < 0.2) or (not self.human and t != N):
            s = f"'{name}'"
        if len(same) > 1:
            doms = [kb.attrs(i)["lexical_domain"] for i in same]
            dom = kb.attrs(cid)["lexical_domain"]
            if doms.count(dom) == 1 and dom.split(".")[0] in ("noun", "verb") and dom != "noun.Tops":
                field = dom.split(".")[1]
                if not self.human:
                    return f"{s} ({dom})"
                return r.choice([f"{s} (the {field} sense)", f"{s} in the {field} sense", f"{s} ({dom})"])
            g = gloss_hint(kb.nodes[cid]["text"])
            if not self.human:
                return f'{s} ("{g}")'
            return r.choice([f"{s} (as in: {g})", f"{s}, meaning '{g}',", f'{s} ("{g}")'])
        if other_pos:
            if not self.human:
                return f"the {POS_WORD[t]} {s}"
            if r.random() < 0.7:
                return r.choice([f"the {POS_WORD[t]} {s}", f"{s} (the {POS_WORD[t]})", f"{s} as a {POS_WORD[t]}"])
        return s

    # ---- readings of one hop with the described node (of type subj) as subject
    def hop(self, hop, obj, subj):
        L = lex_for(hop["edge"], hop["dir"], subj)
        f = {}
        f["pl"] = self.pick(L["pl"]).format(c=obj)
        f["sg"] = self.pick(L["sg"]).format(c=obj)
        if L["obj"]:
            rel, q = self.pick(L["obj"])
            f["objrel"], f["objq"] = rel.format(c=obj), q.format(c=obj)
        else:
            f["objrel"] = f["objq"] = None
        f["np"] = self.pick(L["np"]).format(c=obj) if L["np"] else None
        return f

    def mid_np(self, via, hop, obj, also=False):
        """Indefinite NP for an unnamed intermediate node: 'a noun that is a kind of car'."""
        f = self.hop(hop, obj, via)
        noun = self.tnoun(via, pl=False)
        head = ("an " if noun[0] in "aeiou" else "a ") + noun
        if self.human and self.rng.random() < 0.25:
            head = self.rng.choice(["something", "anything"])
        adv = "also " if also else ""
        cands = [f"{head} that {adv}{f['sg']}"]
        if f["objrel"] and not also:
            cands.append(f"{head} that {f['objrel']}")
        return cands[0] if not self.human else self.rng.choice(cands)

    def clause(self, c, T):
        """Readings of one constraint with the answer (type T) as subject."""
        kb = self.kb
        if "path" in c:
            path = c["path"]
            cid = kb.resolve(c["const"])
            obj = self.const_np(cid)
            if len(path) == 2:
                also = (
                    path[0]["edge"] == path[1]["edge"]
                    and path[0]["dir"] != path[1]["dir"]
                    and self.human
                    and path[0]["edge"] not in ("antonym_of",)
                )
                inner = self.mid_np(path[0]["via"], path[1], obj, also=also)
                f = self.hop(path[0], inner, T)
                # a nested noun phrase: "parts of kinds of car"
                L0 = lex_for(path[0]["edge"], path[0]["dir"], T)
                L1 = lex_for(path[1]["edge"], path[1]["dir"], path[0]["via"])
                if L0["np"] and L1["np"]:
                    f["np2"] = self.pick(L0["np"]).format(c=self.pick(L1["np"]).format(c=obj))
                return f
            return self.hop(path[0], obj, T)
        if "attr" in c:
            pl, red = self.attr_forms(c)
            return {"pl": pl, "red": red, "objrel": None, "objq": None, "np": None}
        pl, red = self.text_forms(c["text"])
        return {"pl": pl, "red": red, "objrel": None, "objq": None, "np": None}

    def attr_forms(self, c):
        a, op, v = c["attr"], c["op"], c["value"]
        if a == "lexical_domain":
            field = v.split(".")[1]
            opts = [
                (f"are in the lexical domain {v}", f"in the lexical domain {v}"),
                (f"are filed under {v}", f"filed under {v}"),
                (f"belong to the {field} domain", f"from the {field} domain"),
                (f"are listed under {v}", f"listed under {v}"),
            ]
            dom = self.kb.by_name.get((D, v))
            if dom:
                m = re.search(r"nouns denoting (.+?)(?: \(|\.$)", self.kb.nodes[dom[0]]["text"])
                if m:
                    opts.append((f"denote {m.group(1)}", f"denoting {m.group(1)}"))
        elif a == "word_count":
            if op == "<" and v == 2:
                opts = [
                    ("have a single word", "with a single word"),
                    ("have no synonyms", "without synonyms"),
                    ("have just one lemma", "with only one lemma"),
                ]
            elif op == ">" and v == 1:
                opts = [
                    ("have more than one word", "with more than one word"),
                    ("have synonyms", "that have synonyms"),
                    ("have at least one synonym", "with at least one synonym"),
                ]
            elif op == ">":
                opts = [
                    (f"have more than {v} words", f"with more than {v} words"),
                    (f"have more than {v} synonyms (counting the name)", f"with over {v} lemmas"),
                    (f"are expressed by more than {v} words", f"having more than {v} synonymous words"),
                ]
            else:
                opts = [
                    (f"have fewer than {v} words", f"with fewer than {v} words"),
                    (f"have under {v} lemmas", f"with under {v} lemmas"),
                ]
        elif a == "satellite":
            opts = (
                [
                    ("are satellite adjectives", "that are satellites"),
                    ("are satellites", "that are satellite senses"),
                ]
                if v
                else [
                    ("are head adjectives", "that are head adjectives"),
                    ("are cluster heads", "heading a cluster"),
                ]
            )
        elif a == "position":
            opts = {
                "predicative": [("are only used predicatively", "used only predicatively")],
                "prenominal": [
                    ("are only used before a noun", "used only attributively"),
                    ("are used only attributively", "used only before nouns"),
                ],
                "postnominal": [("are only used after a noun", "used only after the noun")],
            }[v]
        elif a == "frequency":
            if op == ">" and v == 0:
                opts = [
                    ("have a nonzero corpus frequency", "with a nonzero corpus frequency"),
                    ("occur in the tagged corpus", "attested in the tagged corpus"),
                ]
            elif op == ">":
                opts = [
                    (f"have a corpus frequency above {v}", f"with a corpus frequency above {v}"),
                    (f"occur more than {v} times in the tagged corpus", f"seen over {v} times in the corpus"),
                ]
            else:
                opts = [
                    (f"have a corpus frequency below {v}", f"with a corpus frequency below {v}"),
                    (f"occur fewer than {v} times in the tagged corpus", f"rare in the corpus (under {v})"),
                ]
        elif op == "has_word":
            opts = [
                (f"are also called '{v}'", f"also called '{v}'"),
                (f"include the word '{v}'", f"with '{v}' as a synonym"),
            ]
        else:
            opts = [(f"have {a.replace('_', ' ')} {v}", f"with {a.replace('_', ' ')} {v}")]
        return self.pick(opts)

    def text_forms(self, w):
        return self.pick(
            [
                (f"have '{w}' in their definition", f"whose definition mentions '{w}'"),
                (f"mention '{w}' in the gloss", f"with '{w}' in the gloss"),
                (f"are defined using the word {w}", f"defined with the word '{w}'"),
                (f"mention {w}", f"that mention {w}"),
                (f"have definitions that mention {w}", f"whose gloss says '{w}'"),
            ]
        )


def rel(f):
    return f"that {f['pl']}" if f.get("pl") else f"that {f['objrel']}"


def red(f):
    if f.get("red"):
        return f["red"]
    s = strip_are(f["pl"])
    return s if s else f"that {f['pl']}"


# ---------------------------- template style ----------------------------------------
def render_template(R: Realizer, spec, family):
    T = spec["target_type"]
    other = "other " if spec.get("_other") else ""
    Npl = other + plural(TYPE_WORDS[T][0])
    cons = spec["constraints"]
    cls = [R.clause(c, T) for c in cons]
    if len(cls) == 1 and "path" in cons[0] and len(cons[0]["path"]) == 1 and cls[0]["objq"]:
        return f"Which {Npl} {cls[0]['objq']}?", "t-objq"
    if (
        len(cons) == 2
        and all("path" in c and len(c["path"]) == 1 for c in cons)
        and (cons[0]["path"][0]["edge"], cons[0]["path"][0]["dir"])
        == (cons[1]["path"][0]["edge"], cons[1]["path"][0]["dir"])
    ):
        a, b = (R.const_np(R.kb.resolve(c["const"])) for c in cons)
        f = R.hop(cons[0]["path"][0], f"both {a} and {b}", T)
        return f"Which {Npl} {f['pl']}?", "t-both"
    return f"Which {Npl} {join_and([f['pl'] for f in cls])}?", "t-vp"


# ---------------------------- human style ---------------------------------------------
def human_frames(R: Realizer, spec, family):
    G = sl.Frames(R, spec, rel, "pl", OPENERS, WHICH)
    r, T, cons, cls, Npl, rels = G.r, G.T, G.cons, G.cls, G.Npl, G.rels
    which = lambda: r.choice(WHICH)  # noqa: E731
    F = G.general(
        lambda: f"{r.choice(OPENERS)} {Npl()} {join_and([red(f) if r.random() < 0.6 else rel(f) for f in cls])}",
        lambda: f"{Npl()} {join_and([red(f) for f in cls])}?",
    )
    F.append(
        ("list-of", lambda: f"{r.choice(['What is', 'Give me', 'Give'])} the list of {Npl()} {join_and(rels)}?")
    )
    F.append(("lowercase-query", G.lowercase_query))

    def objq():
        if len(cls) == 1 and cls[0].get("objq"):
            return f"{which()} {Npl()} {cls[0]['objq']}?"
        return None

    F.append(("obj-question", objq))

    def np_frame():
        if len(cls) != 1 or not (cls[0].get("np2") or cls[0].get("np")):
            return None
        np = cls[0].get("np2") if cls[0].get("np2") and r.random() < 0.7 else cls[0].get("np")
        if not np:
            return None
        return r.choice(
            [
                f"What are the {np}?",
                f"{np}?",
                f"list the {np}",
                f"Give me the {np}.",
                f"{np}, please",
                f"which {Npl()} are {np}?",
                f"I want all {np}",
            ]
        )

    F.append(("np", np_frame))

    def constraint_first():
        if len(cls) > 1:
            return G.among(lambda i: red(cls[i]))
        c = cons[0]
        if "path" in c and len(c["path"]) == 1:
            obj = R.const_np(R.kb.resolve(c["const"]))
            f = R.hop(c["path"][0], "it", T)
            return f"{obj}: {r.choice(['which', 'what'])} {Npl()} {f['pl']}?"
        return None

    F.append(("constraint-first", constraint_first))

    # -------- the family's own frames

    def chain():  # the two-hop constraint and the other constraints' verb phrases
        k = next(i for i, c in enumerate(cons) if "path" in c and len(c["path"]) == 2)
        extra = [cls[j]["pl"] for j in range(len(cls)) if j != k]
        return cons[k], (" and " + join_and(extra)) if extra else ""

    def take():
        c2, tail = chain()
        path = c2["path"]
        obj = R.const_np(R.kb.resolve(c2["const"]))
        mid = R.mid_np(path[0]["via"], path[1], obj)
        f0 = R.hop(path[0], "it", T)
        return f"Take {mid}; {r.choice(['which', 'what'])} {Npl()} {f0['pl']}{tail}?"

    def two_step():
        c2, tail = chain()
        path = c2["path"]
        obj = R.const_np(R.kb.resolve(c2["const"]))
        f1 = R.hop(path[1], obj, path[0]["via"])
        f0 = R.hop(path[0], "those", T)
        midpl = R.tnoun(path[0]["via"], pl=True)
        return f"First find the {midpl} {rel(f1)}; then {r.choice(['which', 'what'])} {Npl()} {f0['pl']}{tail}?"

    def both(h0, a, b):
        f = R.hop(h0, f"both {a} and {b}", T)
        return f"{which()} {Npl()} {f['pl']}?"

    want_list = lambda: f"I want a list of {Npl()} {red(cls[0])}."  # noqa: E731
    return F + G.by_family(family, take=take, two_step=two_step, both=both, want_list=want_list)


def polish(q: str, rng: random.Random, style: str) -> str:
    """The shared polish; a question with a proper name or an acronym keeps its case."""
    return sl.polish(q, rng, style, bare_below=0.32, fix_commas=True, keep_case=r"[A-Z][a-z]+ [A-Z]|\b[A-Z]{2,}")


# --------------------------------------------------------------------------------------
# sampling specs
# --------------------------------------------------------------------------------------
TARGET_WEIGHTS = {
    "one-hop": {N: 4, V: 1.5, A: 1.5, R: 0.6, D: 0.3},
    "two-constants": {N: 4, V: 1.2, A: 1.2, R: 0.3},
    "attr-relation": {N: 3.5, V: 1.2, A: 1.5, R: 0.4},
    "text-cue": {N: 3.5, V: 1.2, A: 1.2, R: 0.4},
    "two-hop": {N: 3.5, V: 1.2, A: 1.2, R: 0.4, D: 0.6},
    "two-hop-plus": {N: 3, V: 1, A: 1, R: 0.3},
}
EDGE_WEIGHT = {"derivationally_related": 0.35, "in_lexical_domain": 0.4, "similar_to": 0.6, "also_see": 0.6}
ATTR_KINDS = {
    "lexical_domain": "cat",
    "word_count": "num",
    "satellite": "bool",
    "position": "cat",
    "frequency": "num",
}
STOP = sl.STOP_WORDS | sl.word_set(
    "become certain kind often particular people person somebody someone something thing things three"
)


class Sampler(sl.Sampler):
    min_ans, max_ans = MIN_ANS, MAX_ANS
    singleton_drop = 0.75
    stop = STOP

    def familiar(self, n):
        """Sort key for constants: prefer unambiguous names with corpus frequency."""
        kb = self.kb
        if kb.type(n) == D:
            return 0
        return (kb.n_same_name(n) > 1) + (kb.attrs(n).get("frequency", 0) == 0)

    def incidences(self, i, exclude=()):
        """Random (edge, dir, neighbour) of node i; edge kinds drawn by EDGE_WEIGHT first."""
        kb = self.kb
        kinds = sorted(kb.inc.get(i, ()))
        # weighted random order (Efraimidis-Spirakis keys)
        kinds.sort(key=lambda k: -(self.rng.random() ** (1.0 / EDGE_WEIGHT.get(k[0], 1.0))))
        for e, d in kinds:
            nb = sorted(kb.nbrs(i, e, d))
            self.rng.shuffle(nb)
            nb = nb[:40]
            nb.sort(key=self.familiar)
            for n in nb[:4]:
                if n not in exclude:
                    yield e, d, n

    def attr_cond(self, t):
        kb, r = self.kb, self.rng
        at = kb.attrs(t)
        opts = sorted(a for a in at if a in ATTR_KINDS)
        if not opts:
            return None
        a = r.choice(opts)
        v = at[a]
        kind = ATTR_KINDS[a]
        if kind in ("cat", "bool"):
            return {"attr": a, "op": "=", "value": v}
        if a == "word_count":
            if v == 1:
                return {"attr": a, "op": "<", "value": 2}
            return {"attr": a, "op": ">", "value": r.randint(1, v - 1)}
        if a == "frequency":
            if v <= 0:
                return None
            return {"attr": a, "op": ">", "value": nice(v)}
        return None

    def pair_ok(self, hop, cond):
        return not (cond["attr"] == "lexical_domain" and hop[0] == "in_lexical_domain")

    def chain_ok(self, T, e1, e2):
        # a whole lexical domain is too weak a link for a chain
        return not (e2 == "in_lexical_domain" or (e1 == "in_lexical_domain" and T != D))

    def cue_text(self, t):
        return self.kb.lower_text(t).split('"')[0]  # definition part only


def nice(v):
    """Round v down to 1 significant digit, strictly below v."""
    if v <= 10:
        return max(0, v - 1 - (v > 3))
    mag = 10 ** (len(str(int(v))) - 1)
    x = int(math.floor(v / mag) * mag)
    return x if x < v else x - mag if x - mag > 0 else v - 1


if __name__ == "__main__":
    sl.generator_main(sys.modules[__name__])
