"""The constraint-spec language and question machinery shared by the held-out question sets.

Imported by debian/ and wordnet/ (gen_questions.py, gold_handwritten.py); each of those
scripts puts this directory on sys.path first.  What stays in a set's own directory is what
belongs to its schema: how it samples constraints, how it words them, its templates.

A spec is {"target_type", "constraints": [...], "exclude_constants"?}; a constraint is one of

- {"path": [hop, ...], "const": {"type", "name"[, id attribute]}} with hop = {"edge", "dir"
  [, "via"]}: 'out' means the node nearer the answer is the edge's source, 'via' is the type
  of an unnamed intermediate node; a path can have any length;
- {"attr", "op", "value"} with op '=', '>' or '<', plus the operators a KB adds (attr_ops);
- {"text": word}: the whole word in the node's text, ignoring case.

``exclude_constants`` drops the named constants from the answers.  Standard library only.
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
from collections.abc import Callable
from typing import Any, ClassVar

# --------------------------------------------------------------------------------------
# knowledge base + spec evaluation
# --------------------------------------------------------------------------------------


class KB:
    """A bundle's graph in memory (schema.json, nodes.jsonl.gz, edges.jsonl.gz).

    A subclass may set ``id_attr``, an attribute that names a node uniquely (constants that
    carry it are resolved by it, the others by a unique (type, name)), and ``attr_ops``,
    attribute operators beyond '=', '>' and '<': {op: fn(node, cond) -> bool}.
    """

    id_attr: ClassVar[str | None] = None
    attr_ops: ClassVar[dict[str, Callable[[dict, dict], bool]]] = {}

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
        self.by_name = collections.defaultdict(list)  # (type, name) -> [ids]
        self.by_id_attr = {}
        self.name_types = collections.defaultdict(set)  # lower name -> {types}
        for n in self.nodes:
            self.by_type[n["type"]].append(n["id"])
            self.by_name[(n["type"], n["name"])].append(n["id"])
            self.name_types[n["name"].lower()].add(n["type"])
            if self.id_attr and self.id_attr in n["attrs"]:
                self.by_id_attr[n["attrs"][self.id_attr]] = n["id"]
        self._text = {}

    def type(self, i):
        return self.nodes[i]["type"]

    def name(self, i):
        return self.nodes[i]["name"]

    def attrs(self, i):
        return self.nodes[i]["attrs"]

    def nbrs(self, i, etype, d):
        """Nodes reached from i along etype; d='out' follows the edge, 'in' goes backwards."""
        return self.out.get((i, etype), set()) if d == "out" else self.inn.get((i, etype), set())

    def lower_text(self, i):
        t = self._text.get(i)
        if t is None:
            t = self._text[i] = self.nodes[i]["text"].lower()
        return t

    def resolve(self, c):
        """Constant {"type", "name"[, id_attr]}: by the id attribute, else a unique (type, name)."""
        if self.id_attr and c.get(self.id_attr):
            i = self.by_id_attr[c[self.id_attr]]
            if self.type(i) != c["type"] or self.name(i) != c["name"]:
                raise KeyError(f"{c} resolves to {self.type(i)} {self.name(i)!r}")
            return i
        ids = self.by_name.get((c["type"], c["name"]), [])
        if len(ids) != 1:
            hint = f"; give {self.id_attr}" if self.id_attr else ""
            raise KeyError(f"{c}: {len(ids)} nodes with that type and name{hint}")
        return ids[0]

    def n_same_name(self, i):
        return len(self.by_name[(self.type(i), self.name(i))])


def attr_ok(node, cond, ops=None) -> bool:
    op = cond["op"]
    if ops and op in ops:
        return ops[op](node, cond)
    v = node["attrs"].get(cond["attr"])
    if op == "=":
        return v == cond["value"]
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
    """Gold answer set of a spec (see the module docstring); None if a path fans out past limit."""
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
            filters.append(lambda i, c=c: attr_ok(kb.nodes[i], c, kb.attr_ops))
        elif "text" in c:
            filters.append(lambda i, c=c: text_ok(kb, i, c["text"]))
    ans = set.intersection(*sets) if sets else set(kb.by_type[T])
    ans = {i for i in ans if all(f(i) for f in filters)}
    if spec.get("exclude_constants"):
        ans -= consts
    return ans


def spec_key(spec):
    s = {k: v for k, v in spec.items() if not k.startswith("_")}
    return json.dumps(s, sort_keys=True)


def check_questions(kb: KB, qs, min_ans: int, max_ans: int):
    errs = []
    ids = set()
    for q in qs:
        if q["id"] in ids:
            errs.append(f"dup id {q['id']}")
        ids.add(q["id"])
        if not (min_ans <= len(q["answers"]) <= max_ans):
            errs.append(f"{q['id']} answer size {len(q['answers'])}")
        for a in q["answers"]:
            if not (0 <= a < len(kb.nodes)) or kb.type(a) != q["target_type"]:
                errs.append(f"{q['id']} answer {a} not a {q['target_type']}")
        gold = eval_spec(kb, q["meta"]["spec"], limit=None)
        if sorted(gold) != q["answers"]:
            errs.append(f"{q['id']} gold mismatch")
    return errs


def write_jsonl(path: str, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for q in rows:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------
# wording helpers
# --------------------------------------------------------------------------------------
IRREGULAR_PLURAL = {
    "person": "people",
    "library": "libraries",
    "category": "categories",
    "capability": "capabilities",
}


def plural(noun: str) -> str:
    words = noun.split()
    last = words[-1]
    if last in IRREGULAR_PLURAL:
        last = IRREGULAR_PLURAL[last]
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    elif re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    else:
        last += "s"
    return " ".join([*words[:-1], last])


def join_and(parts):
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


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


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# words too common to make a text cue; each set adds its own
STOP_WORDS = word_set(
    "about above after again against along also among another any are around based because "
    "been before being below between both called can cannot could does doing during each "
    "either especially every few first from further have having here into its itself just "
    "large like made many more most much must only other over same several should since "
    "small some such than that their them then there these they this those through under "
    "until upon used uses using usually various very what when where which while with within "
    "without would your"
)


def polish(q: str, rng: random.Random, style: str, *, bare_below=0.3, fix_commas=False, keep_case=None) -> str:
    """Tidy spacing and capitals.  In the human style, a fifth of the questions are put in
    lower case (unless keep_case matches) and a further bare_below - 0.2 lose their final
    mark."""
    q = re.sub(r"\s+", " ", q).strip()
    q = re.sub(r"\s+([?.,;:])", r"\1", q)
    if fix_commas:
        q = re.sub(r",([?.,])", r"\1", q)
    if q and q[0].islower() and style == "template":
        q = q[0].upper() + q[1:]
    if style == "human":
        x = rng.random()
        if x < 0.2:
            q = q if keep_case and re.search(keep_case, q) else q.lower()
        elif x < bare_below:
            q = q.rstrip("?.")
        elif q[0].islower() and rng.random() < 0.6:
            q = q[0].upper() + q[1:]
    return q


class Frames:
    """Human-style frames that read the same in every set, over one spec's readings: cls
    holds R.clause(c, T) of each constraint, rels their relative clauses (rel(clause)),
    vps their plural verb phrases (clause[vp], None where a constraint has none), reds
    their reduced phrases; Npl() names the answers (plural; may draw a synonym each call);
    which are the words a wh-question opens with.  A frame gives None where it does not
    fit the spec."""

    def __init__(self, R, spec, rel, vp: str, openers, which):
        self.R, self.r = R, R.rng
        self.T = T = spec["target_type"]
        other = "other " if spec.get("_other") else ""
        self.cons = spec["constraints"]
        self.cls = [R.clause(c, T) for c in self.cons]
        self.Npl = lambda: other + R.tnoun(T, pl=True)
        self.rels = [rel(f) for f in self.cls]
        self.vps = [f.get(vp) for f in self.cls]
        self.reds = [f.get("red") for f in self.cls]
        self.openers, self.which = openers, which
        self.has_vp = all(self.vps)

    def general(self, opener_reduced, terse):
        """The frames each set's list opens with, in this order; the two frames over reduced
        phrases are the set's own."""
        return [
            ("wh-vp", self.wh_vp),
            ("opener-rel", self.opener_rel),
            ("opener-reduced", opener_reduced),
            ("terse", terse),
            ("which-are", self.which_are),
            ("name-every", self.name_every),
            ("are-there", self.are_there),
            ("tell-me-which", self.tell_me_which),
            ("like-to-know", self.like_to_know),
        ]

    def by_family(self, family, *, take, two_step, both, want_list):
        """The family's frames, which close each set's list, in this order.  The set's own:
        take and two_step (two-hop), both(hop, a, b) (two-constants, where both constraints
        are one hop along the same edge and direction; a and b name their constants) and
        want_list (one-hop)."""
        if family in ("attr-relation", "text-cue"):
            return [("condition-first", self.condition_first), ("but-only", self.but_only)]
        if family in ("two-hop", "two-hop-plus"):
            return [("take-intermediate", take), ("two-step", two_step)]
        if family == "two-constants":
            return [("both", lambda: self.both(both)), ("and-also", self.and_also)]
        if family == "one-hop":
            return [("please", self.please), ("want-list", want_list)]
        return []

    def wh_vp(self):
        if not self.has_vp:
            return None
        return f"{self.r.choice(self.which)} {self.Npl()} {join_and(self.vps)}?"

    def opener_rel(self):
        r = self.r
        return (
            f"{r.choice(self.openers)} {r.choice(['the ', 'all ', 'any ', ''])}{self.Npl()} {join_and(self.rels)}."
        )

    def which_are(self):
        return f"{self.r.choice(self.which)} are the {self.Npl()} {join_and(self.rels)}?"

    def name_every(self):
        return f"{self.r.choice(['Name', 'Enumerate', 'Identify'])} all the {self.Npl()} {join_and(self.rels)}."

    def are_there(self):
        q = f"Are there any {self.Npl()} {join_and(self.rels)}?"
        return f"{q} {self.r.choice(['Name them.', 'Which ones?', 'List them please.', ''])}".strip()

    def tell_me_which(self):
        return f"Tell me which {self.Npl()} {join_and(self.vps)}." if self.has_vp else None

    def like_to_know(self):
        if not self.has_vp:
            return None
        return f"I'd like to know {self.r.choice(['which', 'what'])} {self.Npl()} {join_and(self.vps)}."

    def lowercase_query(self):
        return f"{self.Npl()} {join_and(self.rels)}".lower()

    def among(self, lead):
        """Constraint first: one constraint, read by lead(i), picks the set the others filter."""
        r = self.r
        i = r.randrange(len(self.vps))
        rest = [self.vps[j] for j in range(len(self.vps)) if j != i]
        if not all(rest):
            return None
        return (
            f"{r.choice(['Among', 'Of', 'Out of'])} the {self.Npl()} {lead(i)}, "
            f"{r.choice(['which', 'which ones', 'which of them'])} {join_and(rest)}?"
        )

    def _split(self):  # (attribute/text constraints, path constraints)
        cons = self.cons
        return [k for k, c in enumerate(cons) if "path" not in c], [k for k, c in enumerate(cons) if "path" in c]

    def condition_first(self):
        ic, ip = self._split()
        if not ic or not ip or not all(self.vps[k] for k in ip):
            return None
        r = self.r
        return (
            f"{r.choice(['Only', 'Just'])} {self.Npl()} {self.reds[ic[0]]}: "
            f"{r.choice(['which', 'which ones', 'which of them'])} {join_and([self.vps[j] for j in ip])}?"
        )

    def but_only(self):
        ic, ip = self._split()
        if not ic or not ip:
            return None
        return (
            f"{self.r.choice(self.openers)} {self.Npl()} {join_and([self.rels[j] for j in ip])}, "
            f"but only those {join_and([self.reds[k] for k in ic])}."
        )

    def and_also(self):
        if not self.has_vp or len(self.vps) != 2:
            return None
        return f"{self.r.choice(self.which)} {self.Npl()} {self.vps[0]} and also {self.vps[1]}?"

    def please(self):
        return f"{self.r.choice(['all', 'all the', 'the'])} {self.Npl()} {self.rels[0]}, please"

    def both(self, read):
        cons = self.cons
        if len(cons) != 2 or not all("path" in c for c in cons):
            return None
        h0, h1 = cons[0]["path"][0], cons[1]["path"][0]
        if (h0["edge"], h0["dir"]) != (h1["edge"], h1["dir"]):
            return None
        a, b = (self.R.const_np(self.R.kb.resolve(c["const"])) for c in cons)
        return read(h0, a, b)


def render(R, spec, family, template, frames):
    """Template style: template(R, spec, family).  Human style: the first of the frames
    (frames(R, spec, family) -> [(name, builder)]), in random order, whose builder gives a
    question; the template if none does."""
    if R.style == "template":
        return template(R, spec, family)
    F = frames(R, spec, family)
    order = list(range(len(F)))
    R.rng.shuffle(order)
    for k in order:
        name, fn = F[k]
        q = fn()
        if q:
            return q, "h-" + name
    return template(R, spec, family)


# --------------------------------------------------------------------------------------
# sampling specs
# --------------------------------------------------------------------------------------


class Sampler:
    """The question families' shapes.  Each spec starts from a real answer node t of the
    drawn type; a subclass supplies the schema's choices: ``incidences`` (which edges of a
    node to use, in what order), ``attr_cond`` (an attribute condition t meets), and
    optionally ``pair_ok``, ``chain_ok``, ``cue_text``, ``stop``, the answer-count range and
    the share of single-answer specs thrown away.
    """

    min_ans, max_ans = 1, 30
    singleton_drop = 0.5
    stop: ClassVar[frozenset[str] | set[str]] = STOP_WORDS

    def __init__(self, kb: KB, rng: random.Random):
        self.kb, self.rng = kb, rng
        self.want_dir = None  # one-hop: the direction of the next question's edge

    def incidences(self, i, exclude=()):
        """Yield (edge, dir, neighbour) of node i in a random order."""
        raise NotImplementedError

    def attr_cond(self, t) -> dict | None:
        raise NotImplementedError

    def pair_ok(self, hop, cond) -> bool:
        """attr-relation: may the hop (edge, dir, neighbour) go with the attribute condition?"""
        return True

    def chain_ok(self, T, e1, e2) -> bool:
        """two-hop: may a chain run through edges e1 then e2 to a target of type T?"""
        return True

    def cue_text(self, t) -> str:
        """The lower-case text a text cue is taken from."""
        return self.kb.lower_text(t)

    def one(self, t, exclude=(), want_dir=None):
        for e, d, n in self.incidences(t, exclude):
            if want_dir is None or d == want_dir:
                return e, d, n
        return None

    def cconst(self, n):
        c = {"type": self.kb.type(n), "name": self.kb.name(n)}
        ida = self.kb.id_attr
        if ida and ida in self.kb.attrs(n):
            c[ida] = self.kb.attrs(n)[ida]
        return c

    def hopc(self, e, d, n):
        return {"path": [{"edge": e, "dir": d}], "const": self.cconst(n)}

    def text_word(self, t, avoid: str):
        words = re.findall(r"[a-z][a-z]{4,}", self.cue_text(t))
        words = [
            w
            for w in dict.fromkeys(words)
            if w not in self.stop and w not in avoid.lower() and w not in self.kb.name(t).lower()
        ]
        if not words:
            return None
        return self.rng.choice(words)

    def sample(self, family, T):
        kb, r = self.kb, self.rng
        ids = kb.by_type.get(T)
        if not ids:
            return None
        t = r.choice(ids)
        spec: dict[str, Any] = {"target_type": T, "constraints": []}
        if family == "one-hop":
            x = self.one(t, want_dir=self.want_dir)
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
            if not a or not c or not self.pair_ok(a, c):
                return None
            spec["constraints"] = [self.hopc(*a), c]
        elif family == "text-cue":
            a = self.one(t)
            if not a:
                return None
            w = self.text_word(t, kb.name(a[2]))
            if not w:
                return None
            spec["constraints"] = [self.hopc(*a), {"text": w}]
        elif family in ("two-hop", "two-hop-plus"):
            a = self.one(t)
            if not a:
                return None
            e1, d1, m = a
            b = next(iter(self.incidences(m, exclude={t})), None)
            if not b:
                return None
            e2, d2, c = b
            if not self.chain_ok(T, e1, e2):
                return None
            cons = {
                "path": [{"edge": e1, "dir": d1, "via": kb.type(m)}, {"edge": e2, "dir": d2}],
                "const": self.cconst(c),
            }
            spec["constraints"] = [cons]
            if family == "two-hop-plus":
                x = next(iter(self.incidences(t, exclude={m, c})), None)
                if not x:
                    return None
                spec["constraints"].append(self.hopc(*x))
            if kb.type(c) == T:
                spec["exclude_constants"] = True
        return spec

    def acceptable(self, family, spec):
        """Compute gold; reject sizes outside min_ans..max_ans and redundant constraints."""
        kb = self.kb
        ans = eval_spec(kb, spec, limit=5000)
        if ans is None or not (self.min_ans <= len(ans) <= self.max_ans):
            return None
        if len(ans) == 1 and self.rng.random() < self.singleton_drop:  # keep singletons from dominating
            return None
        if len(spec["constraints"]) > 1:
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


# --------------------------------------------------------------------------------------
# generation and the scripts' entry points
# --------------------------------------------------------------------------------------


def generate(kb: KB, n: int, seed: int, style: str, prefix: str, schema) -> list[dict]:
    """n questions, the families in equal shares, ids {prefix}-NNNN.  schema is a set's
    gen_questions module: it names FAMILIES, TARGET_WEIGHTS ({family: {target type: weight}}),
    Realizer(kb, rng, style), Sampler(kb, rng) (a subclass of Sampler above),
    render_template(R, spec, family) and human_frames(R, spec, family) (see render), and may
    name polish(q, rng, style) and MAX_TRIES (per family; 20000 unless given)."""
    families, target_weights = schema.FAMILIES, schema.TARGET_WEIGHTS
    polish_q = getattr(schema, "polish", polish)
    max_tries = getattr(schema, "MAX_TRIES", 20000)
    rng = random.Random(seed)
    R = schema.Realizer(kb, rng, style)
    S = schema.Sampler(kb, rng)
    quota = {f: n // len(families) for f in families}
    for f in families[: n - sum(quota.values())]:
        quota[f] += 1
    out, seen_spec, seen_q = [], set(), set()
    for fam in families:
        got, tries = 0, 0
        w = target_weights[fam]
        types = [t for t in w if kb.by_type.get(t)]
        T, t_tries = None, 0
        while got < quota[fam] and tries < max_tries:
            tries += 1
            if T is None or t_tries > 300:  # keep the drawn target type until it succeeds
                T = rng.choices(types, weights=[w[t] for t in types])[0]
                S.want_dir = ("out", "in")[got % 2] if fam == "one-hop" else None  # alternate
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
            q, pat = render(R, spec, fam, schema.render_template, schema.human_frames)
            q = polish_q(q, rng, style)
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


def generator_main(schema) -> None:
    """A set's gen_questions.py BUNDLE OUT.jsonl [--seed S] [--n N] [--style template|human].
    schema is that module (see generate); it also names KB (its subclass of KB), NAME (ids
    are NAME-style-sSEED-NNNN), DEFAULT_N, and MIN_ANS and MAX_ANS (checked on every question)."""
    doc = schema.__doc__
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=schema.DEFAULT_N)
    ap.add_argument("--style", choices=["template", "human"], default="template")
    a = ap.parse_args()
    kb = schema.KB(a.bundle)
    qs = generate(kb, a.n, a.seed, a.style, f"{schema.NAME}-{a.style}-s{a.seed}", schema)
    errs = check_questions(kb, qs, schema.MIN_ANS, schema.MAX_ANS)
    if errs:
        print("INVALID questions:\n  " + "\n  ".join(errs[:30]), file=sys.stderr)
        sys.exit(1)
    write_jsonl(a.out, qs)
    fam = collections.Counter(q["meta"]["family"] for q in qs)
    tt = collections.Counter(q["target_type"] for q in qs)
    print(f"wrote {len(qs)} questions to {a.out}; families {dict(fam)}; targets {dict(tt)}")


def handwritten_gold(kb: KB, handwritten, min_ans: int, max_ans: int):
    """(qa lines, errors) for hand-written questions {"id", "question", "target_type",
    "family", "spec"}: answers computed from the spec, min_ans..max_ans of them."""
    out, errs = [], []
    for h in handwritten:
        if h["spec"]["target_type"] != h["target_type"]:
            errs.append(f"{h['id']}: target_type differs from the spec's")
            continue
        try:
            ans = eval_spec(kb, h["spec"], limit=None)
        except KeyError as e:
            errs.append(f"{h['id']}: constant not in bundle: {e}")
            continue
        if not (min_ans <= len(ans) <= max_ans):
            errs.append(f"{h['id']}: {len(ans)} answers")
            continue
        out.append(
            {
                "id": h["id"],
                "question": h["question"],
                "answers": sorted(ans),
                "target_type": h["target_type"],
                "meta": {"family": h["family"], "style": "handwritten", "spec": h["spec"], "n_answers": len(ans)},
            }
        )
    errs += check_questions(kb, out, min_ans, max_ans)
    return out, errs


def gold_main(doc: str, kb_class: type[KB], default_questions: str, min_ans: int, max_ans: int) -> None:
    """gold_handwritten.py BUNDLE OUT.jsonl [--questions FILE]: exits non-zero on any problem."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--questions", default=default_questions)
    a = ap.parse_args()
    kb = kb_class(a.bundle)
    with open(a.questions, encoding="utf-8") as qf:
        handwritten = [json.loads(line) for line in qf if line.strip()]
    out, errs = handwritten_gold(kb, handwritten, min_ans, max_ans)
    if errs:
        print("handwritten gold problems:\n  " + "\n  ".join(errs), file=sys.stderr)
        sys.exit(1)
    write_jsonl(a.out, out)
    fam = collections.Counter(q["meta"]["family"] for q in out)
    print(f"wrote {len(out)} handwritten questions with computed gold to {a.out}; families {dict(fam)}")
