#!/usr/bin/env python3
"""Build a held-out SKB bundle from Unicode CLDR data: territories, UN regions, groupings,
languages, scripts, currencies, time zones and metazones.

Usage:
    build_skb.py SUPPLEMENTAL_XML OUT_DIR [--validate-only]

SUPPLEMENTAL_XML is CLDR's supplementalData.xml (the copy shipped by the PyPI package
`language-data`, e.g. .../site-packages/language_data/data/supplementalData.xml; pass `auto`
to locate it through the running interpreter).  It gives territory containment, territory
population / GDP / literacy, language populations per territory with official status, and
the scripts of each language.  English display names, currencies in use (with dates),
currency digits, time zones per territory, metazones and likely subtags come from the PyPI
package `babel` (its bundled CLDR data), which must be importable.  Standard offsets of
time zones come from the standard library's zoneinfo (the system tz database) at a fixed
date.  The output is deterministic for fixed package versions.
"""

from __future__ import annotations

import collections
import datetime
import os
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bundle_writer

SCHEMA = {
    "name": "cldr-world",
    "description": (
        "Countries and territories of the world from the Unicode CLDR supplemental data: the UN "
        "regions and continents they lie in, the languages spoken there (with official status and "
        "population shares), the scripts those languages are written in, the currencies used now "
        "or formerly, their time zones and the named time (metazone) each zone observes, and "
        "membership in the European Union, the Eurozone and the United Nations."
    ),
    "node_types": [
        {
            "name": "territory",
            "name_attr": "name",
            "description": (
                "A country, nation, state or dependent territory with a two-letter ISO 3166 code "
                "(also called a land or place); attributes give its code, population, GDP in US "
                "dollars and literacy rate in percent."
            ),
        },
        {
            "name": "region",
            "name_attr": "name",
            "description": (
                "A geographic region of the UN M49 scheme: the world, a continent (Africa, "
                "Americas, Asia, Europe, Oceania), a subregion such as Western Africa or "
                "South-Eastern Asia, or a wider area such as Latin America or Sub-Saharan Africa; "
                "attributes give its numeric code and level."
            ),
        },
        {
            "name": "organization",
            "name_attr": "name",
            "description": (
                "A political or monetary union or international body (also called a bloc, union "
                "or grouping): the European Union, the Eurozone or the United Nations."
            ),
        },
        {
            "name": "language",
            "name_attr": "name",
            "description": (
                "A human language (also called a tongue or idiom) with an ISO 639 code; "
                "attributes give its code and an estimate of its number of speakers summed over "
                "the territories where it is spoken."
            ),
        },
        {
            "name": "script",
            "name_attr": "name",
            "description": (
                "A writing system (also called an alphabet, script or writing) with an ISO 15924 "
                "code, such as Latin, Cyrillic or Devanagari."
            ),
        },
        {
            "name": "currency",
            "name_attr": "name",
            "description": (
                "A currency (also called money or legal tender) with an ISO 4217 code, in use now or "
                "in the past; attributes give its code, symbol, number of decimal digits and "
                "whether it is still in circulation."
            ),
        },
        {
            "name": "time_zone",
            "name_attr": "name",
            "description": (
                "A time zone of the IANA tz database, named Area/City such as Europe/Paris; "
                "attributes give its main city and its standard offset from UTC in hours."
            ),
        },
        {
            "name": "metazone",
            "name_attr": "name",
            "description": (
                "A named zone time shared by several time zones (a metazone), such as Central "
                "European Time or Pacific Time; attributes give its CLDR identifier."
            ),
        },
    ],
    "edge_types": [
        (
            "located_in",
            [("territory", "region")],
            "Links a territory to its UN subregion: the territory is located in (lies in, belongs "
            "to) the target region.",
        ),
        (
            "part_of",
            [("region", "region")],
            "Links a region to a larger one: the region is part of the target region (a subregion "
            "of a continent, a continent of the world).",
        ),
        (
            "member_of",
            [("territory", "organization")],
            "Links a territory to a union or body it belongs to: the territory is a member of "
            "the target organization.",
        ),
        (
            "official_in",
            [("language", "territory")],
            "Links a language to a territory where it has national status: the language is an "
            "official (or de facto official) language of the target territory.",
        ),
        (
            "regional_official_in",
            [("language", "territory")],
            "Links a language to a territory where it is official only in some provinces or "
            "states: the language has regional official status in the target territory.",
        ),
        (
            "spoken_in",
            [("language", "territory")],
            "Links a language to a territory with speakers of it: the language is spoken in the "
            "target territory by some share of its population.",
        ),
        (
            "main_territory",
            [("language", "territory")],
            "Links a language to its most typical territory: the language is most likely used "
            "in the target territory (CLDR likely subtags).",
        ),
        (
            "written_in",
            [("language", "script")],
            "Links a language to its writing system: the language is written in the target script.",
        ),
        (
            "uses_currency",
            [("territory", "currency")],
            "Links a territory to its money today: the territory uses the target currency as legal tender.",
        ),
        (
            "formerly_used",
            [("territory", "currency")],
            "Links a territory to money it no longer uses: the territory formerly used the "
            "target currency, which was withdrawn or replaced there.",
        ),
        (
            "zone_in",
            [("time_zone", "territory")],
            "Links a time zone to the territory that keeps it: the time zone is used in the target territory.",
        ),
        (
            "observes",
            [("time_zone", "metazone")],
            "Links a time zone to the named zone time it follows: the time zone observes the target metazone.",
        ),
    ],
}

CONTINENTS = {"002", "019", "142", "150", "009"}
OFFSET_DATE = datetime.datetime(2025, 1, 15, 12, 0)


def find_supplemental() -> str:
    import language_data

    return os.path.join(os.path.dirname(language_data.__file__), "data", "supplementalData.xml")


def join_names(xs: list[str]) -> str:
    xs = list(xs)
    if not xs:
        return ""
    if len(xs) == 1:
        return xs[0]
    return ", ".join(xs[:-1]) + " and " + xs[-1]


def fmt_pct(p: float) -> str:
    if p >= 10:
        return f"{p:.0f}%"
    if p >= 1:
        return f"{p:.1f}".rstrip("0").rstrip(".") + "%"
    return f"{p:.2g}%"


def fmt_big(n: int) -> str:
    if n >= 1_000_000_000:
        return f"{n / 1e9:.1f} billion"
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} million"
    if n >= 10_000:
        return f"{n / 1e3:.0f} thousand"
    return str(n)


def build(xml_path: str, out_dir: str) -> dict:
    t0 = time.time()
    import zoneinfo

    import babel
    from babel import Locale
    from babel.core import get_global
    from babel.numbers import get_currency_name, get_currency_symbol

    if xml_path == "auto":
        xml_path = find_supplemental()
    en = Locale("en")
    tnames = en.territories
    lnames = en.languages
    snames = dict(en.scripts)
    snames.update({"Hans": "Simplified Han", "Hant": "Traditional Han"})  # CLDR's stand-alone forms
    root = ET.parse(xml_path).getroot()

    # ------------------------------------------------------------ containment
    region_children = collections.defaultdict(list)  # region -> [codes]
    for g in root.iter("group"):
        if g.get("status") == "deprecated":
            continue
        region_children[g.get("type")].extend(g.get("contains").split())
    orgs = [c for c in ("EU", "EZ", "UN") if c in region_children]
    region_children["001"] = [c for c in region_children["001"] if c not in orgs]
    regions = sorted(c for c in region_children if c not in orgs)
    territories = set()
    for r in regions:
        for c in region_children[r]:
            if c not in region_children and len(c) == 2 and c.isalpha():
                territories.add(c)

    # ------------------------------------------------------------ territory info
    tinfo = {}
    langpop = collections.defaultdict(dict)  # territory -> {lang: (pct, status)}
    for t in root.iter("territory"):
        code = t.get("type")
        if t.find("languagePopulation") is None and t.get("population") is None:
            continue
        tinfo[code] = t
        for lp in t.findall("languagePopulation"):
            lang = lp.get("type").split("_")[0]
            pct = float(lp.get("populationPercent"))
            st = lp.get("officialStatus")
            old = langpop[code].get(lang)
            if old is None or pct > old[0] or (st and not old[1]):
                langpop[code][lang] = (max(pct, old[0]) if old else pct, st or (old[1] if old else None))
    territories |= {c for c in tinfo if len(c) == 2 and c.isalpha() and c not in orgs}
    territories = sorted(c for c in territories if c in tnames and c not in ("ZZ",))

    # ------------------------------------------------------------ language data
    lang_scripts = collections.defaultdict(list)
    ld = root.find("languageData")
    for lg in ld.findall("language"):
        if lg.get("alt") == "secondary":
            continue
        for s in (lg.get("scripts") or "").split():
            if s not in lang_scripts[lg.get("type")]:
                lang_scripts[lg.get("type")].append(s)
    likely = get_global("likely_subtags")
    languages = set(lang_scripts)
    for tc in territories:
        languages |= set(langpop.get(tc, {}))
    languages = sorted(lg for lg in languages if lg in lnames)

    # ------------------------------------------------------------ currencies & zones
    tcur = get_global("territory_currencies")
    fractions = get_global("currency_fractions")
    currencies = set()
    for tc in territories:
        for cur, _start, _end, _tender in tcur.get(tc, []):
            currencies.add(cur)
    currencies = sorted(c for c in currencies if get_currency_name(c, locale="en") != c)
    zone_terr = get_global("zone_territories")
    meta_zones = get_global("meta_zones")
    mz_names = en._data["meta_zones"]
    zones = sorted(z for z, t in zone_terr.items() if t in territories)
    metazones = sorted({meta_zones[z] for z in zones if z in meta_zones and meta_zones[z] in mz_names})

    # ------------------------------------------------------------ nodes
    nodes = []
    key2id = {}

    def add(kind, key, name, attrs):
        key2id[(kind, key)] = len(nodes)
        nodes.append({"id": len(nodes), "type": kind, "name": name, "attrs": attrs, "text": ""})

    for r in regions:
        lvl = "world" if r == "001" else "continent" if r in CONTINENTS else "subregion"
        if r in ("202", "003", "419"):
            lvl = "area"
        if r == "QO":
            lvl = "subregion"
        add("region", r, "World" if r == "001" else tnames.get(r, r), {"code": r, "level": lvl})
    for o in orgs:
        add("organization", o, {"EZ": "Eurozone"}.get(o, tnames.get(o, o)), {"code": o})
    for tc in territories:
        a = {"code": tc}
        t = tinfo.get(tc)
        if t is not None:
            if t.get("population"):
                a["population"] = int(float(t.get("population")))
            if t.get("gdp"):
                a["gdp"] = int(float(t.get("gdp")))
            if t.get("literacyPercent"):
                a["literacy_percent"] = float(t.get("literacyPercent"))
        add("territory", tc, tnames[tc], a)
    lang_name = {}
    seen_names = collections.Counter(lnames[lg] for lg in languages)
    for lg in languages:
        nm = lnames[lg] if seen_names[lnames[lg]] == 1 else f"{lnames[lg]} ({lg})"
        lang_name[lg] = nm
    scripts = set()
    for lg in languages:
        scripts |= set(lang_scripts.get(lg, []))
    scripts = sorted(s for s in scripts if s in snames)
    # speakers
    speakers = collections.Counter()
    for tc in territories:
        pop = nodes[key2id[("territory", tc)]]["attrs"].get("population", 0)
        for lg, (pct, _st) in langpop.get(tc, {}).items():
            speakers[lg] += pop * pct / 100
    for lg in languages:
        a = {"code": lg}
        if speakers[lg]:
            a["speakers"] = round(speakers[lg])
        add("language", lg, lang_name[lg], a)
    for s in scripts:
        add("script", s, snames[s], {"code": s})
    current = set()
    for tc in territories:
        for cur, _start, end, tender in tcur.get(tc, []):
            if end is None and tender:
                current.add(cur)
    for c in currencies:
        digits = fractions.get(c, fractions["DEFAULT"])[0]
        add(
            "currency",
            c,
            get_currency_name(c, locale="en"),
            {"code": c, "symbol": get_currency_symbol(c, locale="en"), "digits": digits, "current": c in current},
        )
    mz_label = {}
    for m in metazones:
        long = mz_names[m].get("long", {})
        mz_label[m] = long.get("generic") or long.get("standard") or m
    lbl_count = collections.Counter(mz_label.values())
    for m in metazones:
        nm = mz_label[m] if lbl_count[mz_label[m]] == 1 else f"{mz_label[m]} ({m.replace('_', ' ')})"
        add("metazone", m, nm, {"cldr_id": m})
    zone_offset = {}
    for z in zones:
        city = en._data["time_zones"].get(z, {}).get("city") or z.rsplit("/", 1)[-1].replace("_", " ")
        a = {"city": city}
        try:
            off = zoneinfo.ZoneInfo(z).utcoffset(OFFSET_DATE) - zoneinfo.ZoneInfo(z).dst(OFFSET_DATE)
            h = off.total_seconds() / 3600
            a["utc_offset"] = int(h) if h == int(h) else h
            zone_offset[z] = a["utc_offset"]
        except Exception:
            pass
        add("time_zone", z, z, a)

    # ------------------------------------------------------------ edges
    edges = set()
    E = lambda a, t, b: edges.add((a, t, b))  # noqa: E731
    parent = collections.defaultdict(list)
    for r in regions:
        for c in region_children[r]:
            if ("region", c) in key2id:
                E(key2id[("region", c)], "part_of", key2id[("region", r)])
                parent[("region", c)].append(r)
            elif ("territory", c) in key2id:
                E(key2id[("territory", c)], "located_in", key2id[("region", r)])
                parent[("territory", c)].append(r)
    for o in orgs:
        for c in region_children[o]:
            if ("territory", c) in key2id:
                E(key2id[("territory", c)], "member_of", key2id[("organization", o)])
    for tc in territories:
        tid = key2id[("territory", tc)]
        for lg, (_pct, st) in langpop.get(tc, {}).items():
            if ("language", lg) not in key2id:
                continue
            lid = key2id[("language", lg)]
            E(lid, "spoken_in", tid)
            if st in ("official", "de_facto_official"):
                E(lid, "official_in", tid)
            elif st == "official_regional":
                E(lid, "regional_official_in", tid)
        for cur, _start, end, tender in tcur.get(tc, []):
            if ("currency", cur) not in key2id:
                continue
            if end is None and tender:
                E(tid, "uses_currency", key2id[("currency", cur)])
            elif end is not None:
                E(tid, "formerly_used", key2id[("currency", cur)])
    for lg in languages:
        lid = key2id[("language", lg)]
        for s in lang_scripts.get(lg, []):
            if ("script", s) in key2id:
                E(lid, "written_in", key2id[("script", s)])
        ls = likely.get(lg)
        if ls:
            terr = ls.split("_")[-1]
            if ("territory", terr) in key2id:
                E(lid, "main_territory", key2id[("territory", terr)])
    for z in zones:
        zid = key2id[("time_zone", z)]
        E(zid, "zone_in", key2id[("territory", zone_terr[z])])
        m = meta_zones.get(z)
        if m in metazones:
            E(zid, "observes", key2id[("metazone", m)])

    # ------------------------------------------------------------ texts
    out_adj = collections.defaultdict(lambda: collections.defaultdict(list))
    in_adj = collections.defaultdict(lambda: collections.defaultdict(list))
    for s, t, d in sorted(edges):
        out_adj[s][t].append(d)
        in_adj[d][t].append(s)
    N = lambda i: nodes[i]["name"]  # noqa: E731

    def names(ids, key=None):
        return [N(i) for i in sorted(ids, key=key or (lambda i: N(i)))]

    for nd in nodes:
        i, kind, a = nd["id"], nd["type"], nd["attrs"]
        sents = []
        if kind == "territory":
            tc = a["code"]
            regs = names(out_adj[i]["located_in"])
            sents.append(f"{nd['name']} ({tc}) is a country or territory in {join_names(regs) or 'the world'}.")
            if "population" in a:
                s = f"It has a population of about {fmt_big(a['population'])}"
                if "literacy_percent" in a:
                    s += f" and a literacy rate of {a['literacy_percent']:g}%"
                sents.append(s + ".")
            off = names(in_adj[i]["official_in"])
            if len(off) == 1:
                sents.append(f"Its official language is {off[0]}.")
            elif off:
                sents.append(f"{join_names(off)} are official languages.")
            reg = names(in_adj[i]["regional_official_in"])
            if reg:
                sents.append(
                    f"{join_names(reg)} {'has' if len(reg) == 1 else 'have'} official status in some regions."
                )
            lp = langpop.get(tc, {})
            spoken = sorted(
                (x for x in in_adj[i]["spoken_in"]),
                key=lambda x: (-lp.get(nodes[x]["attrs"]["code"], (0, None))[0], N(x)),
            )
            if spoken:
                parts = [f"{N(x)} ({fmt_pct(lp[nodes[x]['attrs']['code']][0])})" for x in spoken[:8]]
                sents.append(f"Languages spoken there include {join_names(parts)}.")
            cur = names(out_adj[i]["uses_currency"])
            if len(cur) == 1:
                sents.append(f"Its currency is the {cur[0]}.")
            elif cur:
                sents.append(f"Currencies in use: {join_names(cur)}.")
            old = []
            for c, _start, end, _tender in tcur.get(tc, []):
                if end is not None and ("currency", c) in key2id:
                    old.append(f"the {N(key2id[('currency', c)])} (until {end[0]})")
            if old:
                sents.append(f"It formerly used {join_names(old)}.")
            orgs_i = names(out_adj[i]["member_of"])
            if orgs_i:
                sents.append(f"It is a member of {join_names(['the ' + o for o in orgs_i])}.")
            zs = names(in_adj[i]["zone_in"])
            if len(zs) == 1:
                sents.append(f"It keeps the time zone {zs[0]}.")
            elif 1 < len(zs) <= 8:
                sents.append(f"Its time zones are {join_names(zs)}.")
            elif zs:
                sents.append(f"It spans {len(zs)} time zones, among them {join_names(zs[:5])}.")
        elif kind == "region":
            lvl = a["level"]
            par = names(out_adj[i]["part_of"])
            if lvl == "world":
                sents.append("The world, containing all continents.")
            else:
                sents.append(
                    f"{nd['name']} is a {'continent' if lvl == 'continent' else 'region'} within {join_names(['the World' if p == 'World' else p for p in par])}."
                )
            subs = names(in_adj[i]["part_of"])
            if subs:
                sents.append(f"It comprises {join_names(subs)}.")
            terrs = names(in_adj[i]["located_in"])
            if terrs:
                sents.append(f"Countries and territories in it: {join_names(terrs)}.")
        elif kind == "organization":
            mem = names(in_adj[i]["member_of"])
            sents.append(f"The {nd['name']} has {len(mem)} members.")
            if len(mem) <= 40:
                sents.append(f"Members: {join_names(mem)}.")
        elif kind == "language":
            lg = a["code"]
            scr = names(out_adj[i]["written_in"])
            s = f"{nd['name']} ({lg}) is a language"
            if scr:
                s += f" written in the {join_names(scr)} script{'s' if len(scr) > 1 else ''}"
            sents.append(s + ".")
            off = names(out_adj[i]["official_in"])
            if off:
                sents.append(f"It is an official language of {join_names(off)}.")
            reg = names(out_adj[i]["regional_official_in"])
            if reg:
                sents.append(f"It has regional official status in {join_names(reg)}.")
            sp = sorted(
                out_adj[i]["spoken_in"],
                key=lambda x: (-langpop[nodes[x]["attrs"]["code"]][lg][0], N(x)),
            )
            if sp:
                parts = [f"{N(x)} ({fmt_pct(langpop[nodes[x]['attrs']['code']][lg][0])})" for x in sp[:10]]
                more = f" and {len(sp) - 10} more" if len(sp) > 10 else ""
                sents.append(f"It is spoken in {', '.join(parts)}{more}.")
            mt = names(out_adj[i]["main_territory"])
            if mt:
                sents.append(f"It is most closely associated with {mt[0]}.")
            if a.get("speakers"):
                sents.append(f"Estimated speakers: about {fmt_big(a['speakers'])}.")
        elif kind == "script":
            ls = names(in_adj[i]["written_in"])
            sents.append(f"{nd['name']} ({a['code']}) is a writing system.")
            if ls:
                shown = ls[:25]
                more = f" and {len(ls) - 25} others" if len(ls) > 25 else ""
                sents.append(f"Languages written in it include {join_names(shown)}{more}.")
        elif kind == "currency":
            now = names(in_adj[i]["uses_currency"])
            was = names(in_adj[i]["formerly_used"])
            state = "a current" if a["current"] else "a former"
            sents.append(
                f"The {nd['name']} ({a['code']}, symbol {a['symbol']}) is {state} currency with {a['digits']} decimal digits."
            )
            if now:
                sents.append(f"It is legal tender in {join_names(now)}.")
            if was:
                sents.append(f"It was formerly used in {join_names(was)}.")
        elif kind == "time_zone":
            t = names(out_adj[i]["zone_in"])
            m = names(out_adj[i]["observes"])
            s = f"The time zone {nd['name']} is named after the city of {a['city']} and is used in {t[0]}."
            sents.append(s)
            if "utc_offset" in a:
                o = a["utc_offset"]
                sents.append(f"Its standard time is UTC{'+' if o >= 0 else '-'}{abs(o):g}.")
            if m:
                sents.append(f"It observes {m[0]}.")
        elif kind == "metazone":
            zs = names(in_adj[i]["observes"])
            terr = sorted({N(out_adj[z]["zone_in"][0]) for z in in_adj[i]["observes"]})
            sents.append(
                f"{nd['name']} is a named zone time kept by {len(zs)} time zone{'s' if len(zs) != 1 else ''}."
            )
            if terr:
                sents.append(f"It is used in {join_names(terr[:20])}{' and others' if len(terr) > 20 else ''}.")
        nd["text"] = " ".join(sents)

    schema = bundle_writer.expand_schema(SCHEMA)
    bundle_writer.write_bundle(out_dir, schema, nodes, edges)
    stats = {
        "source": os.path.basename(xml_path),
        "babel_version": babel.__version__,
        "nodes": len(nodes),
        "edges": len(edges),
        "nodes_by_type": dict(collections.Counter(n["type"] for n in nodes)),
        "edges_by_type": dict(sorted(collections.Counter(e[1] for e in edges).items())),
        "seconds_total": round(time.time() - t0, 1),
    }
    bundle_writer.write_stats(out_dir, stats)
    return stats


def main():
    bundle_writer.builder_main(
        __doc__, "supplemental_xml", lambda a: build(a.supplemental_xml, a.out_dir), unique_names=True
    )


if __name__ == "__main__":
    main()
