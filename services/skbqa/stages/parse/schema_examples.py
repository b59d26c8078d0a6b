"""Examples a schema's curator gives in a description ("such as dog / domestic dog", "e.g. dog is in
noun.animal"): nodes of the type or ends of the edge, not words for the type or the relation. Readers of a
description's vocabulary leave them out, for any schema."""

from __future__ import annotations

import re

# An example, up to the end of its clause (a full stop, semicolon, colon or parenthesis; not a dot or colon inside an
# identifier such as noun.animal or role::program).
_EXAMPLES = re.compile(
    r"\b(?:such as|e\.g\.|for example|for instance)\s(?:[^.;:()]|[.:](?=\S))*(?:\.(?=\s|$))?", re.IGNORECASE
)


def without_examples(description: str) -> str:
    """The description without the examples it gives."""
    return _EXAMPLES.sub(" ", description)
