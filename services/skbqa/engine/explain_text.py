"""`skbqa ask --explain` and the `Explain` RPC: the parsed query, the grounding scope and each answer's evidence, as readable lines."""

from __future__ import annotations

import json
from typing import Any

from skbqa.common.answer import Answer, AnswerItem


def _symbol(parsed: dict[str, Any], name: str) -> str:
    symbol = parsed["symbols"].get(name, {})
    label = f"{name}:{symbol.get('type') or '?'}"
    names = symbol.get("names")
    return f"{label} {' | '.join(repr(n) for n in names)}" if names else label


def print_explanation(result: Answer, out: Any = print) -> None:
    parsed = result.notes.get("parsed")
    if parsed:
        out(f"parsed: answer {_symbol(parsed, parsed['target'])}")
        for t in parsed["triplets"]:
            hops = "" if t["hops"] == [1, 1] else f"*{t['hops'][0]}..{t['hops'][1]}"
            arrow = "->" if t["direction"] == "out" else "-"
            out(
                f"  ({_symbol(parsed, t['head'])})-[{t['edge'] or 'any'}{hops}]{arrow}({_symbol(parsed, t['tail'])})"
            )
        for c in parsed["constraints"]:
            out(f"  where {c['symbol']}.{c['attribute']} {c['op']} {c['value']!r}")
        for text in parsed["text"]:
            out(f"  text: {text!r}")
        for warning in parsed["warnings"]:
            out(f"  note: {warning}")
    scope = result.notes.get("scope")
    if scope:
        if scope["grounded"]:
            steps = ", ".join(f"l={level:.2f}→{size}" for level, size in scope["iterations"])
            out(f"grounding: {scope['candidates']} candidates ({steps or scope['reason']})")
        else:
            out(f"grounding skipped: {scope['reason']}")
    if "relaxed" in result.notes:
        dropped = " / ".join(repr(n) for n in result.notes["relaxed"]["dropped"])
        out(f"grounding: the graph has no answer with {dropped}; the answers above are read without it")
    if "loosened" in result.notes:
        edge = result.notes["loosened"]["edge"]
        out(f"grounding: the graph has no answer through {edge!r}; the answers above allow any edge there")
    if "widened" in result.notes:
        names = " / ".join(repr(n) for n in result.notes["widened"]["constant"])
        out(f"grounding: the answers link to what lies within {names}, not to it")
    if "refuted" in result.notes:
        out(f"ranking: {result.notes['refuted']}")
    if "blend" in result.notes:
        blend = result.notes["blend"]
        out(f"ranking: an unsure parse (confidence {blend['confidence']}); grounded and vector strands merged")
    if "rerank" in result.notes:
        out(f"rerank: {result.notes['rerank']}")
    stages = ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items())
    out(f"timings (ms): {stages}")


def print_item_evidence(item: AnswerItem, out: Any = print) -> None:
    out(f"       source: {item.source}  scores: {json.dumps(item.scores)}")
    evidence = item.evidence
    if not evidence:
        return
    if "strand" in evidence:
        out(f"       strand: {evidence['strand']}")
    for triplet in evidence.get("triplets", []):
        through = "; ".join(f"{n['name']} ({n['type']}, id {n['id']})" for n in triplet["through"])
        out(f"       satisfies {triplet['pattern']} through {through or '-'}")
    for constraint in evidence.get("constraints", []):
        out(f"       satisfies {constraint}")


def explanation(answer: Answer) -> str:
    """The `Explain` RPC's text: the same lines `skbqa ask --explain` prints."""
    lines: list[str] = []
    print_explanation(answer, lines.append)
    for item in answer.items:
        lines.append(f"{item.rank:>3}. {item.name}  ({item.type}, id {item.node_id})  score {item.score:.3f}")
        lines.append(f"       why: {item.why}")
        print_item_evidence(item, lines.append)
    return "\n".join(lines)
