#!/usr/bin/env python3
"""Held-out question generator for an SKB bundle (schema.json, nodes.jsonl.gz, edges.jsonl.gz).

Usage:
    gen_questions.py BUNDLE_DIR OUT.jsonl [--seed S] [--n 300] [--style template|human]

Wording comes from the bundle's schema: each edge type's verb phrase is read from its
description ("... : the package depends on the target package ..." -> "depends on") and
inflected (plural, base form, gerund, passive "depended on by", inverse "builds"); type nouns
and their synonyms are read from the node type descriptions ("also called a program,
library or tool").  Gold answers are computed on the graph from a constraint spec that is
stored in meta.spec, so every question can be re-checked with ``eval_spec``.

Families (meta.family): one-hop, two-constants, attr-relation, two-hop, two-hop-plus, text-cue.
Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import re
import sys
from urllib.parse import urlparse

FAMILIES = ["one-hop", "two-constants", "attr-relation", "two-hop", "two-hop-plus", "text-cue"]
MAX_ANS, MIN_ANS = 30, 1

# --------------------------------------------------------------------------------------
# knowledge base + spec evaluation
# --------------------------------------------------------------------------------------


class KB:
    def __init__(self, bundle: str):
        with open(os.path.join(bundle, "schema.json")) as f:
            self.schema = json.load(f)
        self.nodes = []
        with gzip.open(os.path.join(bundle, "nodes.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                self.nodes.append(json.loads(line))
        self.out = collections.defaultdict(set)  # (src, etype) -> {dst}
        self.inn = collections.defaultdict(set)  # (dst, etype) -> {src}
        self.inc = collections.defaultdict(set)  # node -> {(etype, dir)}
        with gzip.open(os.path.join(bundle, "edges.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                self.out[(e["src"], e["type"])].add(e["dst"])
                self.inn[(e["dst"], e["type"])].add(e["src"])
                self.inc[e["src"]].add((e["type"], "out"))
                self.inc[e["dst"]].add((e["type"], "in"))
        self.by_type = collections.defaultdict(list)
        self.by_key = {}
        self.name_types = collections.defaultdict(set)
        for n in self.nodes:
            self.by_type[n["type"]].append(n["id"])
            self.by_key[(n["type"], n["name"])] = n["id"]
            self.name_types[n["name"].lower()].add(n["type"])
        self.pairs = collections.defaultdict(set)
        for e in self.schema["edge_types"]:
            self.pairs[e["name"]].add((e["source"], e["target"]))
        self._text = {}

    def type(self, i):
        return self.nodes[i]["type"]

    def name(self, i):
        return self.nodes[i]["name"]

    def nbrs(self, i, etype, d):
        """Nodes reached from i along etype; d='out' follows the edge, 'in' goes backwards."""
        return self.out.get((i, etype), set()) if d == "out" else self.inn.get((i, etype), set())

    def lower_text(self, i):
        t = self._text.get(i)
        if t is None:
            t = self._text[i] = self.nodes[i]["text"].lower()
        return t

    def resolve(self, c):
        return self.by_key[(c["type"], c["name"])]


def host_of(url: str) -> str:
    try:
        h = urlparse(url).netloc.lower()
    except ValueError:
        return ""
    return h[4:] if h.startswith("www.") else h


def attr_ok(node, cond) -> bool:
    v = node["attrs"].get(cond["attr"])
    op = cond["op"]
    if op == "=":
        return v == cond["value"]
    if op == "host":
        return isinstance(v, str) and host_of(v) == cond["value"]
    if op in (">", "<") and isinstance(v, (int, float)) and not isinstance(v, bool):
        return v > cond["value"] if op == ">" else v < cond["value"]
    return False


def text_ok(kb, i, word) -> bool:
    return re.search(r"\b" + re.escape(word.lower()) + r"\b", kb.lower_text(i)) is not None


def path_sources(kb, path, const_id, target_type, limit=None):
    """All nodes of target_type from which `path` (a list of hops, nearest first) reaches const."""
    cur = {const_id}
    for k in range(len(path) - 1, -1, -1):
        hop = path[k]
        near_type = target_type if k == 0 else path[k - 1]["via"]
        back = "in" if hop["dir"] == "out" else "out"
        nxt = set()
        for x in cur:
            for y in kb.nbrs(x, hop["edge"], back):
                if kb.type(y) == near_type:
                    nxt.add(y)
        cur = nxt
        if limit and len(cur) > limit:
            return None
    return cur


def eval_spec(kb, spec, limit=20000):
    """Gold answer set of a spec: {"target_type", "constraints": [...], "exclude_constants"}.

    constraint kinds: {"path": [hop...], "const": {"type","name"}} with hop = {"edge","dir"
    [,"via"]} ('out': the node nearer the target is the edge's source); {"attr","op","value"};
    {"text": word}.
    """
    T = spec["target_type"]
    sets, filters = [], []
    consts = set()
    for c in spec["constraints"]:
        if "path" in c:
            cid = kb.resolve(c["const"])
            consts.add(cid)
            s = path_sources(kb, c["path"], cid, T, limit)
            if s is None:
                return None
            sets.append(s)
        elif "attr" in c:
            filters.append(lambda i, c=c: attr_ok(kb.nodes[i], c))
        elif "text" in c:
            filters.append(lambda i, c=c: text_ok(kb, i, c["text"]))
    ans = set.intersection(*sets) if sets else set(kb.by_type[T])
    ans = {i for i in ans if all(f(i) for f in filters)}
    if spec.get("exclude_constants"):
        ans -= consts
    return ans


# --------------------------------------------------------------------------------------
# lexicon derived from the schema descriptions
# --------------------------------------------------------------------------------------
IRREG_PART = {
    "break": "broken",
    "build": "built",
    "make": "made",
    "write": "written",
    "take": "taken",
    "give": "given",
    "run": "run",
    "ship": "shipped",
    "tag": "tagged",
    "embed": "embedded",
    "file": "filed",
}
PART_TO_VERB = {v: k for k, v in IRREG_PART.items()}
PART_TO_VERB.update(
    {"maintained": "maintain", "built": "build", "used": "use", "packaged": "package", "developed": "develop"}
)
# passive edges whose inverse active reading is natural ("X is built from S" -> "S builds X")
INVERSE_OK = {"built from": "build", "maintained by": "maintain"}


def plural(noun: str) -> str:
    irregular = {
        "person": "people",
        "library": "libraries",
        "category": "categories",
        "capability": "capabilities",
    }
    words = noun.split()
    last = words[-1]
    if last in irregular:
        last = irregular[last]
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    elif re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    else:
        last += "s"
    return " ".join([*words[:-1], last])


def third_to_base(v: str) -> str:
    if v.endswith("ies"):
        return v[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z)es$", v):
        return v[:-2]
    if v == "has":
        return "have"
    return v[:-1] if v.endswith("s") else v


def participle(base: str) -> str:
    if base in IRREG_PART:
        return IRREG_PART[base]
    if base.endswith("e"):
        return base + "d"
    if re.search(r"[^aeiou]y$", base):
        return base[:-1] + "ied"
    return base + "ed"


def gerund(base: str) -> str:
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith("ee"):
        return base[:-1] + "ing"
    return base + "ing"


class TypeLex:
    def __init__(self, t):
        self.name = t["name"]
        self.noun = t["name"].replace("_", " ")
        m = re.search(r"also called (.+?)\)", t["description"])
        syn = []
        if m:
            for s in re.split(r",\s*|\s+or\s+", m.group(1)):
                s = re.sub(r"^(an?|the)\s+", "", s.strip())
                if s and s != self.noun:
                    syn.append(s)
        self.synonyms = syn
        self.pl = plural(self.noun)

    def art(self, noun=None):
        noun = noun or self.noun
        return ("an " if noun[0] in "aeiou" else "a ") + noun


class EdgeLex:
    """Verb-phrase readings of an edge type, derived from its description sentence."""

    def __init__(self, name, desc):
        self.name = name
        m = re.search(r":\s*the (?:source |binary )?package (.+?) the target\b", desc) or re.search(
            r"\bthe \w+ (.+?) the target\b", desc
        )
        vp = (m.group(1) if m else name.replace("_", " ")).strip()
        self.vp = vp
        if vp.startswith("is "):
            self.passive = True
            self.part = vp[3:]  # "built from"
            self.sg, self.pl = vp, "are " + self.part
            self.base = "be " + self.part
            self.ger = self.part
            inv = INVERSE_OK.get(self.part)
            self.inv_pl = inv
            self.inv_sg = inv + "s" if inv else None
            self.inv_ger = gerund(inv) if inv else None
            self.by_ok = False
        else:
            self.passive = False
            w = vp.split()
            verb, rest = w[0], " ".join(w[1:])
            b = third_to_base(verb)
            self.sg = vp
            self.pl = (b + " " + rest).strip()
            self.base = self.pl
            self.ger = (gerund(b) + " " + rest).strip()
            self.part = (participle(b) + " " + rest).strip()  # "depended on"
            self.by_ok = rest in ("", "on")
            self.inv_pl = self.inv_sg = self.inv_ger = None


# --------------------------------------------------------------------------------------
# surface realisation
# --------------------------------------------------------------------------------------
STOP = set(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "along",
        "also",
        "among",
        "another",
        "any",
        "are",
        "around",
        "based",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "built",
        "called",
        "can",
        "cannot",
        "could",
        "does",
        "doing",
        "during",
        "each",
        "either",
        "every",
        "few",
        "first",
        "from",
        "further",
        "have",
        "having",
        "here",
        "into",
        "its",
        "itself",
        "just",
        "like",
        "made",
        "many",
        "more",
        "most",
        "much",
        "must",
        "need",
        "needs",
        "only",
        "other",
        "over",
        "same",
        "should",
        "since",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "under",
        "until",
        "upon",
        "used",
        "uses",
        "using",
        "very",
        "what",
        "when",
        "where",
        "which",
        "while",
        "with",
        "within",
        "without",
        "would",
        "your",
        "allows",
        "allow",
        "provides",
        "provided",
        "provide",
        "package",
        "packages",
        "debian",
        "contains",
        "containing",
        "include",
        "includes",
        "including",
        "files",
        "file",
        "support",
        "supports",
        "supported",
        "version",
        "versions",
        "based",
        "other",
        "which",
        "various",
        "several",
        "program",
        "programs",
        "library",
        "libraries",
        "module",
        "modules",
        "binary",
        "source",
        "data",
        "common",
        "development",
        "documentation",
        "especially",
        "usually",
        "useful",
        "simple",
        "different",
        "currently",
        "easily",
        "mainly",
        "following",
        "features",
        "feature",
        "there",
        "where",
        "other",
        "another",
        "these",
        "those",
        "within",
        "without",
        "whose",
        "which",
        "while",
        "being",
        "number",
        "small",
        "large",
        "allows",
        "means",
    ]
)

ATTR_LABEL = {
    "installed_size": "installed size",
    "multi_arch": "multi-arch mode",
    "binary_count": "number of binary packages",
    "package_count": "number of packages",
    "provider_count": "number of providers",
    "maintainer_email_domain": "maintainer e-mail domain",
    "email_domain": "e-mail domain",
}
ATTR_UNIT = {"installed_size": " KiB"}


class Realizer:
    def __init__(self, kb: KB, rng: random.Random, style: str):
        self.kb, self.rng, self.style = kb, rng, style
        self.T = {t["name"]: TypeLex(t) for t in kb.schema["node_types"]}
        self.E = {}
        for e in kb.schema["edge_types"]:
            self.E.setdefault(e["name"], EdgeLex(e["name"], e["description"]))

    # ---- nouns
    def tnoun(self, t, pl=True, allow_syn=True):
        lex = self.T[t]
        noun = lex.noun
        if self.style == "human" and allow_syn and lex.synonyms and self.rng.random() < 0.55:
            noun = self.rng.choice(lex.synonyms)
        return plural(noun) if pl else noun

    def rel_pron(self, t):
        return "who" if t == "maintainer" else "that"

    def const_np(self, cid):
        kb, r = self.kb, self.rng
        t, name = kb.type(cid), kb.name(cid)
        amb = len(kb.name_types[name.lower()]) > 1
        if self.style == "template":
            if t == "package":
                return f"the package {name}" if amb else name
            if t == "maintainer":
                return name
            if t == "section":
                return f"section {name}"
            return f"the {self.T[t].noun} {name}"
        syn = self.T[t].synonyms
        if t == "package":
            opts = [name, name, f"'{name}'", f"the {name} package"]
            if amb:
                opts = [f"the {name} package", f"the package {name}", f"the {name} {r.choice(syn or ['package'])}"]
            return r.choice(opts)
        if t == "source_package":
            return r.choice(
                [
                    f"the {name} source",
                    f"source package {name}",
                    f"the source package '{name}'",
                    f"the {name} source package",
                ]
            )
        if t == "maintainer":
            return r.choice([name, name, f"'{name}'"])
        if t == "section":
            return r.choice([f"the {name} section", f"section {name}", f"the '{name}' section"])
        if t == "debtag":
            return r.choice([f"the tag {name}", f"the debtag {name}", f"'{name}'", f"tag {name}"])
        return r.choice([f"the virtual package {name}", f"virtual package {name}", f"'{name}'"])

    # ---- one hop, target side is the node being described
    def hop_forms(self, hop, obj, obj_is_subject_np=True):
        """Readings of 'X <hop> obj' with X the described node. Returns dict of strings/None."""
        E = self.E[hop["edge"]]
        f = {}
        if hop["dir"] == "out":
            if E.passive:
                f["vp_pl"], f["vp_sg"] = f"are {E.part} {obj}", f"is {E.part} {obj}"
                f["red"] = f"{E.part} {obj}"
            else:
                f["vp_pl"], f["vp_sg"] = f"{E.pl} {obj}", f"{E.sg} {obj}"
                f["red"] = f"{E.ger} {obj}"
            f["objrel"] = None
            f["doq"] = None
        else:
            f["objrel"] = f"{obj} {E.sg}"  # "X depends on" / "X is built from"
            f["doq"] = f"is {obj} {E.part}" if E.passive else f"does {obj} {E.base}"
            if E.passive and E.inv_pl:
                f["vp_pl"], f["vp_sg"] = f"{E.inv_pl} {obj}", f"{E.inv_sg} {obj}"
                f["red"] = f"{E.inv_ger} {obj}"
            elif not E.passive and (E.by_ok or self.style == "template"):
                f["vp_pl"], f["vp_sg"] = f"are {E.part} by {obj}", f"is {E.part} by {obj}"
                f["red"] = f"{E.part} by {obj}"
            else:
                f["vp_pl"] = f["vp_sg"] = f["red"] = None
        return f

    def mid_np(self, via, hop, obj, also=False):
        """Indefinite NP for an unnamed intermediate node: 'a package built from X'."""
        r = self.rng
        f = self.hop_forms(hop, obj)
        if self.style == "template":
            head = self.T[via].art()
        else:
            opts = [self.T[via].art()] + [self.T[via].art(s) for s in self.T[via].synonyms[:2]]
            if via == "maintainer":
                opts += ["someone", "a person or team"]
            elif via in ("package", "virtual_package"):
                opts += ["something", "any package"]
            head = r.choice(opts)
        pron = self.rel_pron(via)
        adv = "also " if also else ""
        cands = []
        if f["vp_sg"]:
            vp = f["vp_sg"]
            if adv and vp.startswith("is "):
                cands.append(f"{head} {pron} is also {vp[3:]}")
            else:
                cands.append(f"{head} {pron} {adv}{vp}")
        if f["objrel"]:
            cands.append(f"{head} that {f['objrel']}")
        if f["red"] and not also and self.style == "human":
            cands.append(f"{head} {f['red']}")
        if self.style == "template":
            return cands[0]
        return r.choice(cands)

    def path_obj(self, c):
        """Render the object NP of a path constraint (const, or intermediate + const)."""
        path = c["path"]
        cid = self.kb.resolve(c["const"])
        obj = self.const_np(cid)
        if len(path) == 1:
            return path[0], obj
        assert len(path) == 2
        also = path[0]["edge"] == path[1]["edge"] and path[0]["dir"] != path[1]["dir"]
        return path[0], self.mid_np(path[0]["via"], path[1], obj, also=also and self.style == "human")

    def attr_forms(self, c, target_type):
        """(vp_pl, red) for an attribute condition."""
        r = self.rng
        a, op, v = c["attr"], c["op"], c["value"]
        label = ATTR_LABEL.get(a, a.replace("_", " "))
        unit = ATTR_UNIT.get(a, "")
        if op == "host":
            opts = [
                (f"have a homepage on {v}", f"with a homepage on {v}"),
                (f"are hosted on {v}", f"hosted on {v}"),
                (f"have their homepage at {v}", f"whose homepage is at {v}"),
            ]
        elif isinstance(v, bool):
            word = a[3:] if a.startswith("is_") else a.replace("_", "-")
            if a.startswith("is_"):
                opts = (
                    [(f"are {plural(word)}", f"that are {plural(word)}")]
                    if v
                    else [(f"are not {plural(word)}", f"that are not {plural(word)}")]
                )
                if v and word == "team" and self.style == "human":
                    opts.append(("are teams rather than individuals", "that are teams"))
                if not v and word == "team" and self.style == "human":
                    opts.append(("are individual people", "that are individuals, not teams"))
            else:
                opts = [(f"are marked {word}", f"marked {word}"), (f"are {word}", f"flagged {word}")]
        elif op == "=":
            opts = [(f"have {label} {v}", f"with {label} {v}"), (f"have {label} '{v}'", f"whose {label} is {v}")]
            if a == "priority":
                opts += [
                    (f"have {v} priority", f"with {v} priority"),
                    (f"are of {v} priority", f"of {v} priority"),
                ]
            if a == "architecture" and v == "all":
                opts += [("are architecture-independent", "that are architecture-independent (arch all)")]
            if a == "architecture" and v != "all":
                opts += [(f"are built for {v}", f"built specifically for {v}")]
            if a == "facet":
                opts += [(f"belong to the {v} facet", f"in the {v} facet")]
            if a.endswith("email_domain"):
                opts += [(f"use an e-mail address at {v}", f"with an @{v} address")]
        else:
            word = {
                ">": ["above", "over", "more than", "greater than"],
                "<": ["below", "under", "less than", "smaller than"],
            }[op]
            w0 = word[0] if self.style == "template" else r.choice(word)
            a_label = ("an " if label[0] in "aeiou" else "a ") + label
            opts = [
                (f"have {label} {w0} {v}{unit}", f"with {label} {w0} {v}{unit}"),
                (f"have {a_label} {w0} {v}{unit}", f"whose {label} is {w0} {v}{unit}"),
            ]
            if a == "installed_size":
                big = op == ">"
                opts += [
                    (
                        f"take {'more' if big else 'less'} than {v} KiB of disk space",
                        f"{'bigger' if big else 'smaller'} than {v} KiB once installed",
                    ),
                    (
                        f"are {'larger' if big else 'smaller'} than {v} KiB installed",
                        f"using {'over' if big else 'under'} {v} KiB on disk",
                    ),
                ]
            if a == "binary_count":
                opts += [
                    (
                        f"build {'more' if op == '>' else 'fewer'} than {v} binary packages",
                        f"building {'more' if op == '>' else 'fewer'} than {v} binaries",
                    )
                ]
            if a == "package_count" and target_type == "maintainer":
                opts += [
                    (
                        f"maintain {'more' if op == '>' else 'fewer'} than {v} packages",
                        f"responsible for {'over' if op == '>' else 'under'} {v} packages",
                    )
                ]
        return opts[0] if self.style == "template" else r.choice(opts)

    def text_forms(self, w):
        if self.style == "template":
            return (f"mention '{w}'", f"that mention '{w}'")
        return self.rng.choice(
            [
                (f"mention '{w}'", f"mentioning '{w}'"),
                (f"mention {w}", f"that mention {w}"),
                (f"have '{w}' in their description", f"with '{w}' in the description"),
                (f"are described with the word {w}", f"whose description mentions {w}"),
                (f"talk about {w}", f"described as something about '{w}'"),
                (f"say '{w}' in their description", f"whose description contains the word '{w}'"),
            ]
        )

    def clause(self, c, T):
        """Return dict with vp_pl / red / objrel / doq for one constraint."""
        if "path" in c:
            hop, obj = self.path_obj(c)
            return self.hop_forms(hop, obj)
        if "attr" in c:
            vp, red = self.attr_forms(c, T)
            return {"vp_pl": vp, "red": red, "objrel": None, "doq": None}
        vp, red = self.text_forms(c["text"])
        return {"vp_pl": vp, "red": red, "objrel": None, "doq": None}


def rel_of(f, pron="that"):
    if f.get("vp_pl"):
        return f"{pron} {f['vp_pl']}"
    return f"that {f['objrel']}"


def join_and(parts):
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


# ---------------------------- template style: one deterministic frame per shape -------
def render_template(R: Realizer, spec):
    T = spec["target_type"]
    N = ("other " if spec.get("exclude_constants") and spec.get("_other") else "") + R.T[T].pl
    cls = [R.clause(c, T) for c in spec["constraints"]]
    if (
        len(cls) == 1
        and cls[0].get("doq")
        and "path" in spec["constraints"][0]
        and len(spec["constraints"][0]["path"]) == 1
    ):
        return f"Which {N} {cls[0]['doq']}?", "t-doq"
    if all(f.get("vp_pl") for f in cls):
        return f"Which {N} {join_and([f['vp_pl'] for f in cls])}?", "t-vp"
    cs = spec["constraints"]
    if (
        all("path" in c and len(c["path"]) == 1 for c in cs)
        and len(cs) == 2
        and len({(c["path"][0]["edge"], c["path"][0]["dir"]) for c in cs}) == 1
    ):
        E = R.E[cs[0]["path"][0]["edge"]]
        a, b = (R.const_np(R.kb.resolve(c["const"])) for c in cs)
        if E.passive:
            return f"Which {N} are both {a} and {b} {E.part}?", "t-both"
        return f"Which {N} do both {a} and {b} {E.base}?", "t-both"
    pron = R.rel_pron(T)
    return f"Which are the {N} {join_and([rel_of(f, pron) for f in cls])}?", "t-rel"


# ---------------------------- human style: many frames ---------------------------------
OPENERS = [
    "I'm looking for",
    "Can you find",
    "Show me",
    "List",
    "Give me",
    "Find",
    "I need",
    "Could you list",
    "Please list",
    "Looking for",
    "Help me find",
    "Get me",
]


def human_frames(R: Realizer, spec, family):
    """Return a list of (pattern_name, builder) for this family; builders return str or None."""
    r = R.rng
    T = spec["target_type"]
    other = "other " if spec.get("_other") else ""
    cons = spec["constraints"]
    cls = [R.clause(c, T) for c in cons]
    pron = R.rel_pron(T)
    Npl = lambda: other + R.tnoun(T, pl=True)  # noqa: E731
    lambda: R.tnoun(T, pl=False)
    # object-less pronoun reading of the first clause (for constraint-first frames)
    has_vp = all(f.get("vp_pl") for f in cls)
    rels = [rel_of(f, pron) for f in cls]
    reds = [f.get("red") for f in cls]

    def mixed():  # reduced phrases where possible, else relative clauses
        return join_and([reds[i] if reds[i] and r.random() < 0.6 else rels[i] for i in range(len(cls))])

    F = []
    F.append(
        (
            "wh-vp",
            lambda: (
                f"{r.choice(['Which', 'What'])} {Npl()} {join_and([f['vp_pl'] for f in cls])}?" if has_vp else None
            ),
        )
    )
    F.append(
        (
            "opener-rel",
            lambda: f"{r.choice(OPENERS)} {r.choice(['the ', 'all ', 'any ', ''])}{Npl()} {join_and(rels)}.",
        )
    )
    F.append(("opener-reduced", lambda: f"{r.choice(OPENERS)} {Npl()} {mixed()}"))
    F.append(("terse", lambda: f"{Npl()} {mixed()}?"))
    F.append(("which-are", lambda: f"{r.choice(['Which', 'What'])} are the {Npl()} {join_and(rels)}?"))
    F.append(
        ("name-every", lambda: f"{r.choice(['Name', 'Enumerate', 'Identify'])} all the {Npl()} {join_and(rels)}.")
    )
    F.append(
        (
            "are-there",
            lambda: (
                f"Are there any {Npl()} {join_and(rels)}? {r.choice(['Name them.', 'Which ones?', 'List them please.', ''])}".strip()
            ),
        )
    )
    F.append(
        (
            "tell-me-which",
            lambda: f"Tell me which {Npl()} {join_and([f['vp_pl'] for f in cls])}." if has_vp else None,
        )
    )
    F.append(
        (
            "like-to-know",
            lambda: (
                f"I'd like to know {r.choice(['which', 'what'])} {Npl()} {join_and([f['vp_pl'] for f in cls])}."
                if has_vp
                else None
            ),
        )
    )

    def do_any():
        if not has_vp:
            return None
        vps = [f["vp_pl"] for f in cls]
        tail = r.choice(["If so, which?", "Which ones?", "List them."])
        if all(v.startswith("are ") for v in vps):
            return f"Are any {Npl()} {join_and([v[4:] for v in vps])}? {tail}"
        if any(v.startswith("are ") for v in vps):
            return None
        return f"Do any {Npl()} {join_and(vps)}? {tail}"

    F.append(("do-any", do_any))
    F.append(
        (
            "list-of",
            lambda: f"{r.choice(['What is', 'What would be', 'Give'])} the list of {Npl()} {join_and(rels)}?",
        )
    )
    F.append(
        (
            "figure-out",
            lambda: (
                f"Help me figure out {r.choice(['which', 'what'])} {Npl()} {join_and([f['vp_pl'] for f in cls])}."
                if has_vp
                else None
            ),
        )
    )
    F.append(("lowercase-query", lambda: f"{Npl()} {join_and(rels)}".lower()))

    def doq_frame():
        if len(cls) == 1 and cls[0].get("doq"):
            if T == "maintainer" and r.random() < 0.6:
                return f"Who {cls[0]['doq']}?"
            return f"{r.choice(['Which', 'What'])} {Npl()} {cls[0]['doq']}?"
        return None

    F.append(("do-question", doq_frame))

    def echo():  # "libssl3 is depended on by which packages?"
        c = cons[0]
        if "path" not in c or len(c["path"]) != 1 or len(cons) != 1:
            return None
        hop = c["path"][0]
        E = R.E[hop["edge"]]
        obj = R.const_np(R.kb.resolve(c["const"]))
        if hop["dir"] == "in":
            return f"{obj} {E.sg} which {Npl()}?"
        if E.passive:
            return None
        if E.by_ok:
            return f"{obj} is {E.part} by which {Npl()}?"
        return None

    F.append(("echo", echo))

    def constraint_first():
        if len(cls) < 2:
            c = cons[0]
            if "path" in c and len(c["path"]) == 1 and cls[0].get("vp_pl"):
                obj = R.const_np(R.kb.resolve(c["const"]))
                f = R.hop_forms(c["path"][0], "them" if c["const"]["type"] == "maintainer" else "it")
                vp = f.get("vp_pl")
                if vp:
                    return f"{obj}: {r.choice(['which', 'what'])} {Npl()} {vp}?"
            return None
        i = r.randrange(len(cls))
        rest = [cls[j] for j in range(len(cls)) if j != i]
        lead = reds[i] or rels[i]
        if not all(f.get("vp_pl") for f in rest):
            return None
        return (
            f"{r.choice(['Among', 'Of', 'Out of'])} the {Npl()} {lead}, "
            f"{r.choice(['which', 'which ones', 'which of them'])} {join_and([f['vp_pl'] for f in rest])}?"
        )

    F.append(("constraint-first", constraint_first))

    def who_q():
        if T != "maintainer" or len(cls) != 1 or not cls[0].get("vp_pl"):
            return None
        vp = cls[0]["vp_pl"]
        vp = re.sub(r"^are ", "is ", vp)
        vp = re.sub(r"^maintain ", "maintains ", vp)
        return f"Who {vp}?"

    F.append(("who", who_q))

    # -------- family specific frames
    if family == "attr-relation" or family == "text-cue":

        def cond_first():
            ic = [k for k, c in enumerate(cons) if "path" not in c]
            ip = [k for k, c in enumerate(cons) if "path" in c]
            if not ic or not ip or not all(cls[k].get("vp_pl") for k in ip):
                return None
            k = ic[0]
            return (
                f"{r.choice(['Only', 'Just'])} {Npl()} {cls[k]['red']}: "
                f"{r.choice(['which', 'which ones', 'which of them'])} {join_and([cls[j]['vp_pl'] for j in ip])}?"
            )

        F.append(("condition-first", cond_first))

        def but_only():
            ic = [k for k, c in enumerate(cons) if "path" not in c]
            ip = [k for k, c in enumerate(cons) if "path" in c]
            if not ic:
                return None
            return (
                f"{r.choice(OPENERS)} {Npl()} {join_and([rels[j] for j in ip])}, "
                f"but only those {join_and([cls[k]['red'] for k in ic])}."
            )

        F.append(("but-only", but_only))
    if family in ("two-hop", "two-hop-plus"):

        def via_frame():
            c = next(c for c in cons if "path" in c and len(c["path"]) == 2)
            k = cons.index(c)
            path = c["path"]
            cid = R.kb.resolve(c["const"])
            obj = R.const_np(cid)
            mid = R.mid_np(path[0]["via"], path[1], obj)
            f0 = R.hop_forms(path[0], "it")
            if not f0.get("vp_pl") or any(not cls[j].get("vp_pl") for j in range(len(cls)) if j != k):
                return None
            extra = [cls[j]["vp_pl"] for j in range(len(cls)) if j != k]
            tail = (" and " + join_and(extra)) if extra else ""
            vp_it = f0["vp_pl"]
            return f"Take {mid}; {r.choice(['which', 'what'])} {Npl()} {vp_it}{tail}?"

        F.append(("take-intermediate", via_frame))

        def two_step():
            c = next(c for c in cons if "path" in c and len(c["path"]) == 2)
            if len(cons) != 1:
                return None
            path = c["path"]
            obj = R.const_np(R.kb.resolve(c["const"]))
            f1 = R.hop_forms(path[1], obj)
            f0 = R.hop_forms(path[0], "those")
            if not f1.get("vp_pl") or not f0.get("vp_pl"):
                return None
            midpl = R.tnoun(path[0]["via"], pl=True)
            return (
                f"First find the {midpl} {rel_of(f1, R.rel_pron(path[0]['via']))}; "
                f"then {r.choice(['which', 'what'])} {Npl()} {f0['vp_pl']}?"
            )

        F.append(("two-step", two_step))
    if family == "two-constants":

        def both():
            if len(cons) != 2 or not all("path" in c for c in cons):
                return None
            h0, h1 = cons[0]["path"][0], cons[1]["path"][0]
            if (h0["edge"], h0["dir"]) != (h1["edge"], h1["dir"]):
                return None
            a = R.const_np(R.kb.resolve(cons[0]["const"]))
            b = R.const_np(R.kb.resolve(cons[1]["const"]))
            f = R.hop_forms(h0, f"both {a} and {b}")
            if f.get("vp_pl"):
                return f"{r.choice(['Which', 'What'])} {Npl()} {f['vp_pl']}?"
            E = R.E[h0["edge"]]
            return (
                f"{r.choice(['Which', 'What'])} {Npl()} are {a} and {b} both {E.part}?"
                if E.passive
                else f"{r.choice(['Which', 'What'])} {Npl()} do {a} and {b} both {E.base}?"
            )

        F.append(("both", both))

        def also():
            if not has_vp or len(cls) != 2:
                return None
            return f"{r.choice(['Which', 'What'])} {Npl()} {cls[0]['vp_pl']} and also {cls[1]['vp_pl']}?"

        F.append(("and-also", also))
    if family == "one-hop":

        def just_rel():
            return f"{r.choice(['all', 'all the', 'the'])} {Npl()} {rels[0]}, please"

        F.append(("please", just_rel))

        def want():
            return f"I want a list of {Npl()} {mixed()}."

        F.append(("want-list", want))
    return F


def polish(q: str, rng: random.Random, style: str) -> str:
    q = re.sub(r"\s+", " ", q).strip()
    q = re.sub(r"\s+([?.,;:])", r"\1", q)
    if q and q[0].islower() and style == "template":
        q = q[0].upper() + q[1:]
    if style == "human":
        x = rng.random()
        if x < 0.2:
            q = q.lower()
        elif x < 0.3:
            q = q.rstrip("?.")
        elif q[0].islower() and rng.random() < 0.6:
            q = q[0].upper() + q[1:]
    return q


def render(R: Realizer, spec, family):
    if R.style == "template":
        return render_template(R, spec)
    F = human_frames(R, spec, family)
    order = list(range(len(F)))
    R.rng.shuffle(order)
    for k in order:
        name, fn = F[k]
        q = fn()
        if q:
            return q, "h-" + name
    return render_template(R, spec)


# --------------------------------------------------------------------------------------
# sampling specs
# --------------------------------------------------------------------------------------
TARGET_WEIGHTS = {
    # a package has exactly one maintainer, source and section, so maintainer/section targets
    # only make non-redundant questions in one-hop and two-hop shapes
    "one-hop": {
        "package": 3.5,
        "source_package": 1.5,
        "maintainer": 1.5,
        "section": 0.8,
        "debtag": 1.2,
        "virtual_package": 1,
    },
    "two-constants": {"package": 4, "source_package": 1.5, "debtag": 1.2, "virtual_package": 0.8},
    "attr-relation": {"package": 4, "source_package": 1.5, "debtag": 1, "virtual_package": 0.7},
    "two-hop": {
        "package": 3,
        "source_package": 1.5,
        "maintainer": 2,
        "section": 1,
        "debtag": 1,
        "virtual_package": 0.7,
    },
    "two-hop-plus": {"package": 3.5, "source_package": 1.2, "maintainer": 1.5, "section": 0.6, "debtag": 0.8},
    "text-cue": {"package": 4, "source_package": 1.5},
}


class Sampler:
    def __init__(self, kb: KB, rng: random.Random):
        self.kb, self.rng = kb, rng
        self.attr_kinds = self._attr_kinds()

    def _attr_kinds(self):
        kb = self.kb
        kinds = collections.defaultdict(dict)
        for t, ids in kb.by_type.items():
            vals = collections.defaultdict(collections.Counter)
            for i in ids:
                for a, v in kb.nodes[i]["attrs"].items():
                    if isinstance(v, str) and v.startswith("http"):
                        vals[a][("host", host_of(v))] += 1
                    else:
                        vals[a][v] += 1
            for a, cnt in vals.items():
                sample = next(iter(cnt))
                if isinstance(sample, tuple):
                    kinds[t][a] = ("host", cnt)
                elif isinstance(sample, bool):
                    kinds[t][a] = ("bool", cnt)
                elif isinstance(sample, (int, float)):
                    kinds[t][a] = ("num", cnt)
                elif len(cnt) <= 300:
                    kinds[t][a] = ("cat", cnt)
        return kinds

    def incidences(self, i, exclude=()):
        """Random (edge, dir, neighbour) of node i, edge kinds chosen uniformly first."""
        kb = self.kb
        kinds = sorted(kb.inc.get(i, ()))
        self.rng.shuffle(kinds)
        for e, d in kinds:
            nb = sorted(kb.nbrs(i, e, d))
            self.rng.shuffle(nb)
            for n in nb[:6]:
                if n not in exclude:
                    yield e, d, n

    def one(self, t, exclude=(), want_dir=None):
        for e, d, n in self.incidences(t, exclude):
            if want_dir is None or d == want_dir:
                return e, d, n
        return None

    def cconst(self, n):
        return {"type": self.kb.type(n), "name": self.kb.name(n)}

    def hopc(self, e, d, n):
        return {"path": [{"edge": e, "dir": d}], "const": self.cconst(n)}

    def attr_cond(self, t):
        kb, r = self.kb, self.rng
        node = kb.nodes[t]
        T = node["type"]
        opts = [a for a in node["attrs"] if a in self.attr_kinds[T]]
        if not opts:
            return None
        a = r.choice(sorted(opts))
        kind, cnt = self.attr_kinds[T][a]
        v = node["attrs"][a]
        if kind == "host":
            hst = host_of(v)
            if not hst or cnt[("host", hst)] < 3:
                return None
            return {"attr": a, "op": "host", "value": hst}
        if kind == "bool":
            return {"attr": a, "op": "=", "value": v}
        if kind == "cat":
            if cnt[v] < 2:
                return None
            return {"attr": a, "op": "=", "value": v}
        # numeric threshold satisfied by t, rounded to a "nice" number
        if v <= 1:
            return {"attr": a, "op": "<", "value": nice(v + 1, up=True)} if r.random() < 0.5 else None
        if r.random() < 0.6:
            thr = nice(v, up=False)
            if thr >= v:
                thr = v - 1
            return {"attr": a, "op": ">", "value": thr}
        thr = nice(v, up=True)
        if thr <= v:
            thr = v + 1
        return {"attr": a, "op": "<", "value": thr}

    def text_word(self, t, avoid: str):
        words = re.findall(r"[a-z][a-z]{4,}", self.kb.lower_text(t))
        words = [
            w
            for w in dict.fromkeys(words)
            if w not in STOP and w not in avoid.lower() and w not in self.kb.name(t).lower()
        ]
        if not words:
            return None
        return self.rng.choice(words)

    # -------- families
    def sample(self, family, T):
        kb, r = self.kb, self.rng
        ids = kb.by_type.get(T)
        if not ids:
            return None
        t = r.choice(ids)
        spec = {"target_type": T, "constraints": []}
        if family == "one-hop":
            x = self.one(t, want_dir=getattr(self, "want_dir", None))
            if not x:
                return None
            spec["constraints"] = [self.hopc(*x)]
        elif family == "two-constants":
            a = self.one(t)
            if not a:
                return None
            b = None
            for e, d, n in self.incidences(t, exclude={a[2]}):
                if (e, d) != (a[0], a[1]) or r.random() < 0.3:
                    b = (e, d, n)
                    break
            if not b:
                return None
            spec["constraints"] = [self.hopc(*a), self.hopc(*b)]
        elif family == "attr-relation":
            a = self.one(t)
            c = self.attr_cond(t)
            if not a or not c:
                return None
            spec["constraints"] = [self.hopc(*a), c]
        elif family in ("two-hop", "two-hop-plus"):
            a = self.one(t)
            if not a:
                return None
            e1, d1, m = a
            b = None
            for e2, d2, c in self.incidences(m, exclude={t}):
                b = (e2, d2, c)
                break
            if not b:
                return None
            e2, d2, c = b
            if kb.type(c) == T and kb.type(m) == T and (e1, d1) == (e2, d2):
                pass
            cons = {
                "path": [{"edge": e1, "dir": d1, "via": kb.type(m)}, {"edge": e2, "dir": d2}],
                "const": self.cconst(c),
            }
            spec["constraints"] = [cons]
            if family == "two-hop-plus":
                x = None
                for e3, d3, n3 in self.incidences(t, exclude={m, c}):
                    x = (e3, d3, n3)
                    break
                if not x:
                    return None
                spec["constraints"].append(self.hopc(*x))
            if kb.type(c) == T:
                spec["exclude_constants"] = True
        elif family == "text-cue":
            a = self.one(t)
            if not a:
                return None
            w = self.text_word(t, kb.name(a[2]))
            if not w:
                return None
            spec["constraints"] = [self.hopc(*a), {"text": w}]
        return spec

    def acceptable(self, family, spec):
        """Compute gold; reject sizes outside 1..30 and redundant constraints."""
        kb = self.kb
        ans = eval_spec(kb, spec, limit=5000)
        if ans is None or not (MIN_ANS <= len(ans) <= MAX_ANS):
            return None
        if len(ans) == 1 and self.rng.random() < 0.5:  # keep singletons from dominating
            return None
        if family in ("two-constants", "attr-relation", "text-cue", "two-hop-plus"):
            for k in range(len(spec["constraints"])):
                sub = dict(spec, constraints=spec["constraints"][k : k + 1])
                sa = eval_spec(kb, sub, limit=50000)
                if sa is not None and sa == ans:  # the other constraint does no work
                    return None
        if spec.get("exclude_constants"):
            full = eval_spec(kb, dict(spec, exclude_constants=False), limit=5000)
            spec["_other"] = full is not None and len(full) != len(ans)
            if not spec["_other"]:
                spec.pop("exclude_constants")
        return ans


def nice(v, up):
    """Round v to 1-2 significant digits (down or up)."""
    import math

    if v <= 10:
        return int(v) if not up else math.ceil(v)
    mag = 10 ** (len(str(int(v))) - 1)
    step = mag
    if up:
        return int(math.ceil(v / step) * step)
    return int(math.floor(v / step) * step)


def spec_key(spec):
    s = dict(spec)
    s.pop("_other", None)
    return json.dumps(s, sort_keys=True)


def check_questions(kb: KB, qs):
    errs = []
    ids = set()
    for q in qs:
        if q["id"] in ids:
            errs.append(f"dup id {q['id']}")
        ids.add(q["id"])
        if not (MIN_ANS <= len(q["answers"]) <= MAX_ANS):
            errs.append(f"{q['id']} answer size {len(q['answers'])}")
        for a in q["answers"]:
            if not (0 <= a < len(kb.nodes)) or kb.type(a) != q["target_type"]:
                errs.append(f"{q['id']} answer {a} not a {q['target_type']}")
        gold = eval_spec(kb, q["meta"]["spec"], limit=None)
        if sorted(gold) != q["answers"]:
            errs.append(f"{q['id']} gold mismatch")
    return errs


def generate(kb: KB, n: int, seed: int, style: str, prefix: str):
    rng = random.Random(seed)
    R = Realizer(kb, rng, style)
    S = Sampler(kb, rng)
    quota = {f: n // len(FAMILIES) for f in FAMILIES}
    for f in FAMILIES[: n - sum(quota.values())]:
        quota[f] += 1
    out, seen_spec, seen_q = [], set(), set()
    for fam in FAMILIES:
        got, tries = 0, 0
        w = TARGET_WEIGHTS[fam]
        types = [t for t in w if kb.by_type.get(t)]
        T, t_tries = None, 0
        while got < quota[fam] and tries < 20000:
            tries += 1
            if T is None or t_tries > 300:  # keep the drawn target type until it succeeds
                T = rng.choices(types, weights=[w[t] for t in types])[0]
                S.want_dir = ("out", "in")[got % 2]  # one-hop: alternate both directions
                t_tries = 0
            t_tries += 1
            spec = S.sample(fam, T)
            if not spec:
                continue
            k = spec_key(spec)
            if k in seen_spec:
                continue
            ans = S.acceptable(fam, spec)
            if ans is None:
                continue
            q, pat = render(R, spec, fam)
            q = polish(q, rng, style)
            if q.lower() in seen_q:
                continue
            seen_spec.add(k)
            seen_q.add(q.lower())
            got += 1
            T = None
            meta = {
                "family": fam,
                "style": style,
                "pattern": pat,
                "spec": {kk: v for kk, v in spec.items() if not kk.startswith("_")},
                "n_answers": len(ans),
            }
            if fam == "one-hop":
                meta["direction"] = (
                    "target-is-edge-source"
                    if spec["constraints"][0]["path"][0]["dir"] == "out"
                    else "target-is-edge-target"
                )
            out.append(
                {
                    "id": f"{prefix}-{len(out):04d}",
                    "question": q,
                    "answers": sorted(ans),
                    "target_type": spec["target_type"],
                    "meta": meta,
                }
            )
        if got < quota[fam]:
            print(f"warning: only {got}/{quota[fam]} for {fam}", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--style", choices=["template", "human"], default="template")
    a = ap.parse_args()
    kb = KB(a.bundle)
    qs = generate(kb, a.n, a.seed, a.style, f"debian-{a.style}-s{a.seed}")
    errs = check_questions(kb, qs)
    if errs:
        print("INVALID questions:\n  " + "\n  ".join(errs[:30]), file=sys.stderr)
        sys.exit(1)
    with open(a.out, "w") as f:
        for q in qs:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    fam = collections.Counter(q["meta"]["family"] for q in qs)
    tt = collections.Counter(q["target_type"] for q in qs)
    print(f"wrote {len(qs)} questions to {a.out}; families {dict(fam)}; targets {dict(tt)}")


if __name__ == "__main__":
    main()
