"""Every topic name of the pipeline, in one place.

```
gateway ─QUERY─▶ parser ─PARSED─▶ symbols ─SYMBOLS─▶ grounding ─GROUNDED─▶ ranking ─RANKED─▶ reranker ─ANSWER─▶ gateway
any stage ─DEAD_LETTER─▶ (inspection): inputs that failed for good
gateway ─CHANGES─▶ updater ─ANSWER─▶ gateway          (live updates: one record per ApplyChanges batch)
updater, every stage ─VERSIONS─▶ gateway, every stage (broadcast: versions accepted, folded and served)
```

CHANGES and VERSIONS have ONE partition each (`SINGLE_PARTITION`): the order of change batches is the order
versions are given out in, so it must be total; they are not in `ALL`, which is created with the pipeline's
partition count.

Code always uses these unprefixed names. Isolation (parallel test runs, several deployments sharing one Kafka
cluster) is the bus adapter's job: `KafkaBus(topic_prefix=...)`, by default the `SKBQA_TOPIC_PREFIX`
environment variable, puts the prefix in front of every topic and consumer-group name on the wire and strips
it from the messages it returns, so `message.topic == topics.QUERY` holds whatever the prefix.
"""

from __future__ import annotations

import os
import re

from skbqa.common.errors import InvalidInputError

QUERY = "skbqa.query"
PARSED = "skbqa.parsed"
SYMBOLS = "skbqa.symbols"
GROUNDED = "skbqa.grounded"
RANKED = "skbqa.ranked"
ANSWER = "skbqa.answer"
DEAD_LETTER = "skbqa.dead-letter"

CHANGES = "skbqa.changes"
VERSIONS = "skbqa.versions"

ALL: tuple[str, ...] = (QUERY, PARSED, SYMBOLS, GROUNDED, RANKED, ANSWER, DEAD_LETTER)
SINGLE_PARTITION: tuple[str, ...] = (CHANGES, VERSIONS)

PREFIX_ENV = "SKBQA_TOPIC_PREFIX"

# Kafka's rule for topic names; checked here so a bad prefix fails at start-up, not at the first publish.
_LEGAL = re.compile(r"[A-Za-z0-9._-]*")
_MAX_TOPIC_LENGTH = 249


def prefix_from_env() -> str:
    """The prefix from `SKBQA_TOPIC_PREFIX` ('' when unset), validated."""
    prefix = os.environ.get(PREFIX_ENV, "")
    check_prefix(prefix)
    return prefix


def check_prefix(prefix: str) -> None:
    if not _LEGAL.fullmatch(prefix):
        raise InvalidInputError(
            f"topic prefix {prefix!r} may only contain letters, digits, '.', '_' and '-'", prefix=prefix
        )


def with_prefix(name: str, prefix: str) -> str:
    """The on-the-wire name of topic (or group) `name`."""
    full = prefix + name
    if not name or not _LEGAL.fullmatch(full) or len(full) > _MAX_TOPIC_LENGTH:
        raise InvalidInputError(
            f"illegal topic name {full!r} (1-{_MAX_TOPIC_LENGTH} of letters, digits, '.', '_', '-')", topic=full
        )
    return full


def without_prefix(name: str, prefix: str) -> str:
    """Inverse of `with_prefix` (a name without the prefix is returned unchanged)."""
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name
