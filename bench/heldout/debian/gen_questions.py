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

import collections
import os
import random
import re
import sys
from typing import ClassVar
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import spec_language as sl
from spec_language import eval_spec as eval_spec
from spec_language import join_and, plural

NAME, DEFAULT_N = "debian", 300
FAMILIES = ["one-hop", "two-constants", "attr-relation", "two-hop", "two-hop-plus", "text-cue"]
MAX_ANS, MIN_ANS = 30, 1

# --------------------------------------------------------------------------------------
# knowledge base: the shared spec language (spec_language.py) plus the 'host' operator
# --------------------------------------------------------------------------------------


def host_of(url: str) -> str:
    try:
        h = urlparse(url).netloc.lower()
    except ValueError:
        return ""
    return h[4:] if h.startswith("www.") else h


def host_ok(node, cond) -> bool:
    """{"attr", "op": "host", "value"}: the attribute is a URL on that host (www. dropped)."""
    v = node["attrs"].get(cond["attr"])
    return isinstance(v, str) and host_of(v) == cond["value"]


class KB(sl.KB):
    attr_ops: ClassVar = {"host": host_ok}


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
STOP = sl.STOP_WORDS | sl.word_set(
    "allow allows binary built common containing contains currently data debian development "
    "different documentation easily feature features file files following include includes "
    "including libraries library mainly means module modules need needs number package "
    "packages program programs provide provided provides simple source support supported "
    "supports useful version versions whose"
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


# ---------------------------- template style: one deterministic frame per shape -------
def render_template(R: Realizer, spec, family=None):
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


# ---------------------------- human style: many frames (the general ones in spec_language) --
OPENERS = sl.OPENERS


def human_frames(R: Realizer, spec, family):
    """Return a list of (pattern_name, builder) for this family; builders return str or None."""
    pron = R.rel_pron(spec["target_type"])
    G = sl.Frames(R, spec, lambda f: rel_of(f, pron), "vp_pl", OPENERS, ["Which", "What"])
    r, T, cons, cls, Npl, rels, reds, has_vp = G.r, G.T, G.cons, G.cls, G.Npl, G.rels, G.reds, G.has_vp

    def mixed():  # reduced phrases where possible, else relative clauses
        return join_and([reds[i] if reds[i] and r.random() < 0.6 else rels[i] for i in range(len(cls))])

    F = G.general(lambda: f"{r.choice(OPENERS)} {Npl()} {mixed()}", lambda: f"{Npl()} {mixed()}?")

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
    F.append(("lowercase-query", G.lowercase_query))

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
        if len(cls) > 1:
            return G.among(lambda i: reds[i] or rels[i])
        c = cons[0]
        if "path" in c and len(c["path"]) == 1 and cls[0].get("vp_pl"):
            obj = R.const_np(R.kb.resolve(c["const"]))
            f = R.hop_forms(c["path"][0], "them" if c["const"]["type"] == "maintainer" else "it")
            vp = f.get("vp_pl")
            if vp:
                return f"{obj}: {r.choice(['which', 'what'])} {Npl()} {vp}?"
        return None

    F.append(("constraint-first", constraint_first))

    def who_q():
        if T != "maintainer" or len(cls) != 1 or not cls[0].get("vp_pl"):
            return None
        vp = cls[0]["vp_pl"]
        vp = re.sub(r"^are ", "is ", vp)
        vp = re.sub(r"^maintain ", "maintains ", vp)
        return f"Who {vp}?"

    F.append(("who", who_q))

    # -------- the family's own frames

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

    def both(h0, a, b):
        f = R.hop_forms(h0, f"both {a} and {b}")
        if f.get("vp_pl"):
            return f"{r.choice(['Which', 'What'])} {Npl()} {f['vp_pl']}?"
        E = R.E[h0["edge"]]
        return (
            f"{r.choice(['Which', 'What'])} {Npl()} are {a} and {b} both {E.part}?"
            if E.passive
            else f"{r.choice(['Which', 'What'])} {Npl()} do {a} and {b} both {E.base}?"
        )

    want_list = lambda: f"I want a list of {Npl()} {mixed()}."  # noqa: E731
    return F + G.by_family(family, take=via_frame, two_step=two_step, both=both, want_list=want_list)


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


class Sampler(sl.Sampler):
    min_ans, max_ans = MIN_ANS, MAX_ANS
    stop = STOP

    def __init__(self, kb: KB, rng: random.Random):
        super().__init__(kb, rng)
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


if __name__ == "__main__":
    sl.generator_main(sys.modules[__name__])
