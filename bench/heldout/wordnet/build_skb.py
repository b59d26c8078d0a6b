#!/usr/bin/env python3
"""Build a held-out semi-structured knowledge base (SKB) bundle from WordNet 3.0.

Usage:
    build_skb.py WORDNET_DIR OUT_DIR [--validate-only]

WORDNET_DIR holds the WordNet database files (data.noun, data.verb, data.adj, data.adv,
index.*, cntlist.rev), e.g. usr/share/wordnet of Debian's wordnet-base package.  Every
synset becomes a node (noun_concept, verb_concept, adjective_concept, adverb_concept), the
45 lexicographer files become lexical_domain nodes, and the synset pointers (wndb(5)) become
typed edges.  Lexicographer file names are built in (lexnames(5)); a ``lexnames`` file in
WORDNET_DIR is used instead if present.

Writes OUT_DIR/schema.json, OUT_DIR/nodes.jsonl.gz, OUT_DIR/edges.jsonl.gz and
OUT_DIR/build_stats.json, then validates the bundle.  Deterministic, standard library only.
"""

from __future__ import annotations

import collections
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bundle_writer

# --------------------------------------------------------------------------------------
# lexicographer files (lexnames(5WN)): number -> (name, contents)
# --------------------------------------------------------------------------------------
LEXNAMES = {
    0: ("adj.all", "all adjective clusters"),
    1: ("adj.pert", "relational adjectives (pertainyms)"),
    2: ("adv.all", "all adverbs"),
    3: ("noun.Tops", "unique beginner for nouns"),
    4: ("noun.act", "nouns denoting acts or actions"),
    5: ("noun.animal", "nouns denoting animals"),
    6: ("noun.artifact", "nouns denoting man-made objects"),
    7: ("noun.attribute", "nouns denoting attributes of people and objects"),
    8: ("noun.body", "nouns denoting body parts"),
    9: ("noun.cognition", "nouns denoting cognitive processes and contents"),
    10: ("noun.communication", "nouns denoting communicative processes and contents"),
    11: ("noun.event", "nouns denoting natural events"),
    12: ("noun.feeling", "nouns denoting feelings and emotions"),
    13: ("noun.food", "nouns denoting foods and drinks"),
    14: ("noun.group", "nouns denoting groupings of people or objects"),
    15: ("noun.location", "nouns denoting spatial position"),
    16: ("noun.motive", "nouns denoting goals"),
    17: ("noun.object", "nouns denoting natural objects (not man-made)"),
    18: ("noun.person", "nouns denoting people"),
    19: ("noun.phenomenon", "nouns denoting natural phenomena"),
    20: ("noun.plant", "nouns denoting plants"),
    21: ("noun.possession", "nouns denoting possession and transfer of possession"),
    22: ("noun.process", "nouns denoting natural processes"),
    23: ("noun.quantity", "nouns denoting quantities and units of measure"),
    24: ("noun.relation", "nouns denoting relations between people or things or ideas"),
    25: ("noun.shape", "nouns denoting two and three dimensional shapes"),
    26: ("noun.state", "nouns denoting stable states of affairs"),
    27: ("noun.substance", "nouns denoting substances"),
    28: ("noun.time", "nouns denoting time and temporal relations"),
    29: ("verb.body", "verbs of grooming, dressing and bodily care"),
    30: ("verb.change", "verbs of size, temperature change, intensifying, etc."),
    31: ("verb.cognition", "verbs of thinking, judging, analyzing, doubting"),
    32: ("verb.communication", "verbs of telling, asking, ordering, singing"),
    33: ("verb.competition", "verbs of fighting, athletic activities"),
    34: ("verb.consumption", "verbs of eating and drinking"),
    35: ("verb.contact", "verbs of touching, hitting, tying, digging"),
    36: ("verb.creation", "verbs of sewing, baking, painting, performing"),
    37: ("verb.emotion", "verbs of feeling"),
    38: ("verb.motion", "verbs of walking, flying, swimming"),
    39: ("verb.perception", "verbs of seeing, hearing, feeling"),
    40: ("verb.possession", "verbs of buying, selling, owning"),
    41: ("verb.social", "verbs of political and social activities and events"),
    42: ("verb.stative", "verbs of being, having, spatial relations"),
    43: ("verb.weather", "verbs of raining, snowing, thawing, thundering"),
    44: ("adj.ppl", "participial adjectives"),
}

POS_FILES = [("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv")]
POS_TYPE = {"n": "noun_concept", "v": "verb_concept", "a": "adjective_concept", "r": "adverb_concept"}
POS_WORD = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}
SS_NUM = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}
ADJ_MARKER = {"a": "prenominal", "p": "predicative", "ip": "postnominal"}

N, V, A, R, D = "noun_concept", "verb_concept", "adjective_concept", "adverb_concept", "lexical_domain"

# --------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------
NODE_TYPES = [
    (
        N,
        "A noun sense of WordNet (a synset, also called a noun, word, term, concept, thing or kind): "
        "one meaning shared by a set of synonymous nouns, such as dog / domestic dog / Canis "
        "familiaris. Name is the first synonym; attrs give all synonyms (lemmas, '; '-separated), "
        "the lexical domain, the number of words, the sense number of the name among that word's "
        "noun senses (1 = most common), a corpus frequency and the WordNet id; text is the gloss "
        "(definition and example sentences).",
    ),
    (
        V,
        "A verb sense of WordNet (a synset, also called a verb, action, word or term): one meaning "
        "shared by a set of synonymous verbs, such as run / go. Name is the first synonym; attrs give "
        "all synonyms, the lexical domain, the number of words, the sense number of the name, a "
        "corpus frequency and the WordNet id; text is the gloss (definition and examples).",
    ),
    (
        A,
        "An adjective sense of WordNet (a synset, also called an adjective, quality, property, "
        "description or word): one meaning shared by synonymous adjectives, either a head adjective "
        "or a satellite clustered around one. Name is the first synonym; attrs give all synonyms, the "
        "lexical domain, the number of words, whether it is a satellite, the syntactic position when "
        "restricted, the sense number, a corpus frequency and the WordNet id; text is the gloss.",
    ),
    (
        R,
        "An adverb sense of WordNet (a synset, also called an adverb, manner or word): one meaning "
        "shared by synonymous adverbs, such as quickly / rapidly. Name is the first synonym; attrs "
        "give all synonyms, the lexical domain, the number of words, the sense number, a corpus "
        "frequency and the WordNet id; text is the gloss.",
    ),
    (
        D,
        "A WordNet lexical domain (a lexicographer file, also called a semantic field, category or "
        "class), such as noun.animal, noun.artifact, verb.motion or adj.all, grouping the senses of "
        "one part of speech by broad subject; attrs give the part of speech and the number of senses.",
    ),
]

# name, [(source, target) candidates], description.  Only pairs that occur are written.
EDGE_TYPES = [
    (
        "kind_of",
        [(N, N), (V, V)],
        "Hypernymy: the concept is a kind of the target concept, a more specific meaning of it "
        "(dog -> canine; for verbs a particular way of doing it, stroll -> walk).",
    ),
    (
        "instance_of",
        [(N, N)],
        "Instance hypernymy: the concept is an instance of the target concept, a specific named "
        "individual of that class (Paris -> national capital, Einstein -> physicist).",
    ),
    (
        "part_of",
        [(N, N)],
        "Part meronymy: the concept is a part of the target concept, a component of the whole "
        "(wheel -> car, finger -> hand, Paris -> France).",
    ),
    (
        "member_of",
        [(N, N)],
        "Member meronymy: the concept is a member of the target concept, a group or collection "
        "(dog -> pack, Canis -> Canidae, player -> team).",
    ),
    (
        "substance_of",
        [(N, N)],
        "Substance meronymy: the concept is a substance or material of which the target concept is "
        "made or that it contains (wood -> tree, oxygen -> water).",
    ),
    (
        "antonym_of",
        [(N, N), (V, V), (A, A), (R, R)],
        "Antonymy: the concept is an opposite of the target concept, its words have contrary "
        "meaning (hot <-> cold, rise <-> fall); recorded in both directions.",
    ),
    (
        "similar_to",
        [(A, A)],
        "Adjective similarity: the adjective is similar in meaning to the target adjective, a "
        "satellite linked to the head of its cluster or back (scorching <-> hot).",
    ),
    (
        "also_see",
        [(V, V), (A, A)],
        "See-also: the concept is loosely related to the target concept and worth seeing with it "
        "(a cross-reference between verb or adjective senses).",
    ),
    (
        "verb_group",
        [(V, V)],
        "Verb group: the verb sense is grouped with the target verb sense as very close in meaning "
        "(two senses of the same verb that are hard to tell apart).",
    ),
    (
        "entails",
        [(V, V)],
        "Entailment: doing the verb entails doing the target verb; the target is implied by it "
        "(snore -> sleep, buy -> pay).",
    ),
    (
        "causes",
        [(V, V)],
        "Cause: the verb causes the target verb, its action brings the target about (kill -> die, show -> see).",
    ),
    (
        "value_of",
        [(A, N)],
        "Attribute: the adjective expresses a value of the target noun attribute "
        "(heavy -> weight, hot -> temperature).",
    ),
    (
        "derivationally_related",
        [(N, V), (V, N), (N, A), (A, N), (A, V), (V, A), (N, R), (R, N), (A, R), (R, A), (V, R), (R, V)],
        "Derivation: the concept is derivationally related to the target concept of another part of "
        "speech, a form of the same word root (the verb run and the noun runner, the adjective "
        "happy and the noun happiness); recorded in both directions.",
    ),
    (
        "pertains_to",
        [(A, N), (A, A)],
        "Pertainymy: the relational adjective pertains to the target concept, it means 'of or "
        "relating to' it (dental -> tooth, musical -> music).",
    ),
    (
        "derived_from",
        [(R, A)],
        "Adverb derivation: the adverb is derived from the target adjective (quickly -> quick).",
    ),
    (
        "participle_of",
        [(A, V)],
        "Participle: the adjective is a participle of the target verb (broken -> break).",
    ),
    (
        "topic_domain",
        [(N, N), (V, N), (A, N), (R, N)],
        "Topic domain: the concept belongs to the field or topic named by the target concept, it is "
        "a term of that subject (checkmate -> chess, dribble -> basketball).",
    ),
    (
        "region_domain",
        [(N, N), (V, N), (A, N), (R, N)],
        "Region domain: the concept is used in or specific to the region named by the target concept "
        "(a British, American or French term; bloke -> United Kingdom).",
    ),
    (
        "usage_domain",
        [(N, N), (V, N), (A, N), (R, N)],
        "Usage domain: the concept is marked by the usage category named by the target concept, such "
        "as slang, colloquialism, disparagement or plural form (cop -> colloquialism).",
    ),
    (
        "in_lexical_domain",
        [(N, D), (V, D), (A, D), (R, D)],
        "Lexical domain: the concept is filed in the target lexical domain (lexicographer file), "
        "e.g. dog is in noun.animal and run is in verb.motion.",
    ),
]

# pointer symbol -> (edge name, reverse?)  reverse=True means the edge points from target to source
POINTERS = {
    "@": ("kind_of", False),
    "~": ("kind_of", True),
    "@i": ("instance_of", False),
    "~i": ("instance_of", True),
    "#p": ("part_of", False),
    "%p": ("part_of", True),
    "#m": ("member_of", False),
    "%m": ("member_of", True),
    "#s": ("substance_of", False),
    "%s": ("substance_of", True),
    "!": ("antonym_of", False),
    "&": ("similar_to", False),
    "^": ("also_see", False),
    "$": ("verb_group", False),
    "*": ("entails", False),
    ">": ("causes", False),
    "+": ("derivationally_related", False),
    "<": ("participle_of", False),
    ";c": ("topic_domain", False),
    "-c": ("topic_domain", True),
    ";r": ("region_domain", False),
    "-r": ("region_domain", True),
    ";u": ("usage_domain", False),
    "-u": ("usage_domain", True),
}
SYMMETRIC = {"antonym_of", "similar_to", "also_see", "verb_group", "derivationally_related"}


def load_lexnames(wn_dir: str) -> dict[int, tuple[str, str]]:
    p = os.path.join(wn_dir, "lexnames")
    if not os.path.exists(p):
        return dict(LEXNAMES)
    out = {}
    with open(p, encoding="latin-1") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                k = int(parts[0])
                out[k] = (parts[1], LEXNAMES.get(k, (parts[1], parts[1]))[1])
    return out


def parse_data(path: str, pos_letter: str):
    """Yield synset records from a data.<pos> file."""
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            if not _:
                head, gloss = line.rstrip("\n").rstrip().rstrip("|"), ""
            tok = head.split()
            off, lexnum, ss_type = tok[0], int(tok[1]), tok[2]
            w_cnt = int(tok[3], 16)
            words = []
            i = 4
            for _k in range(w_cnt):
                w, lex_id = tok[i], int(tok[i + 1], 16)
                marker = None
                m = re.match(r"^(.*)\((a|p|ip)\)$", w)
                if m:
                    w, marker = m.group(1), m.group(2)
                words.append((w, lex_id, marker))
                i += 2
            p_cnt = int(tok[i])
            i += 1
            ptrs = []
            for _k in range(p_cnt):
                sym, toff, tpos, st = tok[i], tok[i + 1], tok[i + 2], tok[i + 3]
                ptrs.append((sym, toff, "a" if tpos == "s" else tpos, int(st[:2], 16), int(st[2:], 16)))
                i += 4
            yield {
                "offset": off,
                "pos": pos_letter,
                "ss_type": ss_type,
                "lexnum": lexnum,
                "words": words,
                "ptrs": ptrs,
                "gloss": gloss.strip(),
            }


def load_index(path: str) -> dict[str, list[str]]:
    """lemma (lower case) -> synset offsets in sense-number order."""
    out = {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            tok = line.split()
            lemma, p_cnt = tok[0], int(tok[3])
            synset_cnt = int(tok[2])
            offs = tok[4 + p_cnt + 2 :]
            out[lemma] = offs[:synset_cnt]
    return out


def load_cntlist(path: str) -> dict[str, int]:
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="latin-1") as f:
        for line in f:
            tok = line.split()
            if len(tok) == 3:
                out[tok[0]] = int(tok[2])
    return out


def clean_word(w: str) -> str:
    return w.replace("_", " ")


# --------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------
def build(wn_dir: str, out_dir: str) -> dict:
    t0 = time.time()
    lexnames = load_lexnames(wn_dir)
    synsets = []
    for letter, fname in POS_FILES:
        synsets.extend(parse_data(os.path.join(wn_dir, f"data.{fname}"), letter))
    index = {letter: load_index(os.path.join(wn_dir, f"index.{fname}")) for letter, fname in POS_FILES}
    cnt = load_cntlist(os.path.join(wn_dir, "cntlist.rev"))
    by_key = {(s["pos"], s["offset"]): s for s in synsets}

    nodes: list[dict] = []
    # lexical domains first: ids 0..44 in file-number order
    dom_id = {}
    dom_count = collections.Counter(s["lexnum"] for s in synsets)
    for num in sorted(lexnames):
        name, contents = lexnames[num]
        pos_word = {"noun": "noun", "verb": "verb", "adj": "adjective", "adv": "adverb"}[name.split(".")[0]]
        dom_id[num] = len(nodes)
        nodes.append(
            {
                "id": len(nodes),
                "type": D,
                "name": name,
                "attrs": {"part_of_speech": pos_word, "file_number": num, "sense_count": dom_count[num]},
                "text": f"WordNet lexical domain {name} (lexicographer file {num:02d}): {contents}.",
            }
        )

    node_id = {}
    for s in synsets:  # already in (noun, verb, adj, adv) x offset order
        node_id[(s["pos"], s["offset"])] = len(nodes)
        nodes.append(None)  # placeholder, filled below

    def sense_key(s, w, lex_id):
        lemma = w.lower()
        head = ""
        if s["ss_type"] == "s":
            for sym, toff, tpos, _a, _b in s["ptrs"]:
                if sym == "&":
                    h = by_key.get((tpos, toff))
                    if h:
                        hw, hid, _m = h["words"][0]
                        head = f"{hw.lower()}:{hid:02d}"
                    break
        else:
            head = ":"
        return f"{lemma}%{SS_NUM[s['ss_type']]}:{s['lexnum']:02d}:{lex_id:02d}:{head}"

    for s in synsets:
        i = node_id[(s["pos"], s["offset"])]
        lemmas = [clean_word(w) for w, _l, _m in s["words"]]
        first_w = s["words"][0][0]
        offs = index[s["pos"]].get(first_w.lower(), [])
        sense_no = offs.index(s["offset"]) + 1 if s["offset"] in offs else None
        freq = sum(cnt.get(sense_key(s, w, lx), 0) for w, lx, _m in s["words"])
        attrs = {
            "lemmas": "; ".join(dict.fromkeys(lemmas)),
            "lexical_domain": lexnames[s["lexnum"]][0],
            "word_count": len(dict.fromkeys(lemmas)),
            "sense_number": sense_no,
            "frequency": freq,
            "wordnet_id": f"{s['offset']}-{s['ss_type']}",
        }
        if s["pos"] == "a":
            attrs["satellite"] = s["ss_type"] == "s"
            markers = {m for _w, _l, m in s["words"] if m}
            if len(markers) == 1:
                attrs["position"] = ADJ_MARKER[markers.pop()]
        nodes[i] = {
            "id": i,
            "type": POS_TYPE[s["pos"]],
            "name": lemmas[0],
            "attrs": {k: v for k, v in attrs.items() if v is not None},
            "text": s["gloss"],
        }

    # ---------------- edges
    edges: set[tuple[int, str, int]] = set()
    unknown_ptr = collections.Counter()
    dangling = 0
    pertainym_same = 0
    for s in synsets:
        a = node_id[(s["pos"], s["offset"])]
        edges.add((a, "in_lexical_domain", dom_id[s["lexnum"]]))
        for sym, toff, tpos, _sw, _tw in s["ptrs"]:
            b = node_id.get((tpos, toff))
            if b is None:
                dangling += 1
                continue
            if sym == "=":  # attribute: adjective -> noun
                if s["pos"] == "a" and tpos == "n":
                    edges.add((a, "value_of", b))
                elif s["pos"] == "n" and tpos == "a":
                    edges.add((b, "value_of", a))
                continue
            if sym == "\\":  # pertainym (adj) or derived-from-adjective (adv)
                if s["pos"] == "a":
                    edges.add((a, "pertains_to", b))
                elif s["pos"] == "r" and tpos == "a":
                    edges.add((a, "derived_from", b))
                else:
                    pertainym_same += 1
                continue
            if sym not in POINTERS:
                unknown_ptr[sym] += 1
                continue
            et, rev = POINTERS[sym]
            if a == b:
                continue
            if et == "derivationally_related" and s["pos"] == tpos:
                continue  # keep only links across parts of speech
            src, dst = (b, a) if rev else (a, b)
            edges.add((src, et, dst))
            if et in SYMMETRIC:
                edges.add((dst, et, src))

    # ---------------- write
    ntype = {nd["id"]: nd["type"] for nd in nodes}
    used_pairs = collections.Counter((et, ntype[s], ntype[d]) for s, et, d in edges)
    edge_schema = []
    for name, pairs, desc in EDGE_TYPES:
        for src_t, dst_t in pairs:
            if used_pairs.get((name, src_t, dst_t)):
                edge_schema.append({"name": name, "source": src_t, "target": dst_t, "description": desc})
    missing = {
        k: v
        for k, v in used_pairs.items()
        if not any(e["name"] == k[0] and e["source"] == k[1] and e["target"] == k[2] for e in edge_schema)
    }
    if missing:
        raise SystemExit(f"edge signatures not in schema: {missing}")
    schema = {
        "name": "wordnet-3.0",
        "description": (
            "Princeton WordNet 3.0, an English lexical database: every noun, verb, adjective and "
            "adverb sense (synset: a set of synonyms with a definition) as a node, linked by "
            "WordNet's semantic and lexical relations (kind of, instance of, part of, member of, "
            "substance of, antonym, similar to, entails, causes, attribute, derivation, pertainym, "
            "topic/region/usage domain) and filed in 45 lexical domains (lexicographer files)."
        ),
        "node_types": [{"name": n, "description": d, "name_attr": "name"} for n, d in NODE_TYPES],
        "edge_types": edge_schema,
    }
    bundle_writer.write_bundle(out_dir, schema, nodes, edges)
    name_dup = collections.Counter((nd["type"], nd["name"]) for nd in nodes)
    stats = {
        "source": "WordNet 3.0 (Debian package wordnet-base)",
        "synsets": len(synsets),
        "nodes": len(nodes),
        "edges": len(edges),
        "nodes_by_type": dict(collections.Counter(nd["type"] for nd in nodes)),
        "edges_by_type": dict(sorted(collections.Counter(e[1] for e in edges).items())),
        "edges_by_signature": {f"{k[0]}: {k[1]} -> {k[2]}": v for k, v in sorted(used_pairs.items())},
        "nodes_sharing_type_and_name": sum(c for c in name_dup.values() if c > 1),
        "dangling_pointers": dangling,
        "unknown_pointer_symbols": dict(unknown_ptr),
        "pertainyms_skipped": pertainym_same,
        "seconds_total": round(time.time() - t0, 1),
    }
    bundle_writer.write_stats(out_dir, stats)
    return stats


def main():
    bundle_writer.builder_main(__doc__, "wordnet_dir", lambda a: build(a.wordnet_dir, a.out_dir))


if __name__ == "__main__":
    main()
