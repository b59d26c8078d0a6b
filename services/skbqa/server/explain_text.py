"""The `Explain` RPC's human-readable text: the same lines `skbqa ask --explain` prints."""

from __future__ import annotations

from skbqa.cli_explain import print_explanation, print_item_evidence
from skbqa.pipeline import Answer


def explanation(answer: Answer) -> str:
    lines: list[str] = []
    print_explanation(answer, lines.append)
    for item in answer.items:
        lines.append(f"{item.rank:>3}. {item.name}  ({item.type}, id {item.node_id})  score {item.score:.3f}")
        lines.append(f"       why: {item.why}")
        print_item_evidence(item, lines.append)
    return "\n".join(lines)
