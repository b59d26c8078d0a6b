"""English adverbials that name what a question asks about: "What do X and Y have in common *symptom-wise*?",
"where do X and Y overlap *in terms of the processes* they're in?" ask for symptoms and processes, as "What
symptoms do X and Y have in common?" does. The noun is moved to the wh-word (which a "where" or "how" gives up),
where the target-type reader looks for the answer's head noun. English only; the noun is whatever the question says.
"""

from __future__ import annotations

import re

# "symptom-wise", "symptom wise"; a word English glues to "wise" on its own (otherwise, likewise) is no topic
_WISE = re.compile(r"\s*\b(?P<noun>[a-z][a-z]{2,})(?:-|\s)wise\b", re.IGNORECASE)
_NOT_A_TOPIC = frozenset(
    {"other", "like", "clock", "length", "cross", "street", "penny", "counter", "edge", "step"}
)
# "in terms of (the) processes", "with respect to their symptoms": a plural, so a name is not taken for the topic
_IN_TERMS_OF = re.compile(
    r"\s*,?\s*\b(?:in terms of|with respect to|with regard to)\s+(?:the\s+|their\s+|its\s+)?(?P<noun>[a-z]{3,}s)\b",
    re.IGNORECASE,
)
# the wh-word and the auxiliary after it: "What do …", "which are …", "where do …"
_WH_AUXILIARY = re.compile(
    r"^(?P<lead>\W*(?:\w+\W+){0,3}?)(?P<wh>what|which|where|how)\s+"
    r"(?=(?:do|does|did|are|is|were|was|have|has)\b)",
    re.IGNORECASE,
)


def lift_topic_adverbial(question: str) -> str | None:
    """The question with its topic noun moved to its wh-word, or None when it has none to move."""
    for pattern in (_WISE, _IN_TERMS_OF):
        topic = pattern.search(question)
        if topic is None or topic.group("noun").lower() in _NOT_A_TOPIC:
            continue
        rest = (question[: topic.start()] + question[topic.end() :]).lstrip(" ,;:")
        opening = _WH_AUXILIARY.match(rest)
        if opening is None:
            continue
        wh = opening.group("wh")
        asked = wh if wh.lower() in ("what", "which") else "what"
        return f"{opening.group('lead')}{asked} {topic.group('noun')} {rest[opening.end() :]}"
    return None
