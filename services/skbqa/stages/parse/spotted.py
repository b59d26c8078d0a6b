"""What every attribute spotter returns: a constraint read from the question and the tokens it claims."""

from __future__ import annotations

from dataclasses import dataclass

from skbqa.query.structured import AttributeConstraint


@dataclass(frozen=True)
class SpottedConstraint:
    constraint: AttributeConstraint
    start: int  # the first token claimed
    end: int  # one past the last
