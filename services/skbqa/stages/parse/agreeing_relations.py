"""Coordinated names stand in one relation: "countries that belong to *both* NATO *and* the European Union" asks
for members of each, not for parts of one and members of the other. Each name's options are ranked on their own
(the same words, the data of each name's nodes); the group takes the reading every name allows (the data does not
rule it out for any) with the best sum of scores, and a name whose own best reading differs takes that one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skbqa.stages.parse.relations import RelationOption

RULED_OUT = -5.0  # at or below: the name's nodes have no such edge (`RelationChooser.rank`)

# (type name, options ranked best first) per type of one name's nodes
Ranked = Sequence[tuple[str, Sequence[RelationOption]]]
_Key = tuple[tuple[tuple[str, bool], ...], tuple[str, ...]]


def _key(option: RelationOption) -> _Key:
    return tuple((h.edge.name, h.from_constant_side) for h in option.hops), option.vias


def _best_by_key(ranked: Ranked) -> dict[_Key, tuple[float, str, RelationOption]]:
    found: dict[_Key, tuple[float, str, RelationOption]] = {}
    for type_name, options in ranked:
        for option in options:
            key = _key(option)
            if option.score > RULED_OUT and (key not in found or option.score > found[key][0]):
                found[key] = (option.score, type_name, option)
    return found


def agreed_readings(group: Sequence[Ranked]) -> list[tuple[float, str, RelationOption] | None]:
    """Per name of a coordinated group, the reading the group agrees on, or None where there is none or it is
    the name's own best already."""
    by_key = [_best_by_key(ranked) for ranked in group]
    shared = set.intersection(*(set(found) for found in by_key)) if by_key else set()
    if len(group) < 2 or not shared:
        return [None] * len(group)
    agreed = max(sorted(shared), key=lambda key: sum(found[key][0] for found in by_key))
    readings: list[tuple[float, str, RelationOption] | None] = []
    for found in by_key:
        own = max(found.values(), key=lambda reading: reading[0])
        readings.append(None if _key(own[2]) == agreed else found[agreed])
    return readings


def agree_coordinated(
    plans: Sequence[tuple[bool, object]], rank: Callable[[int], Ranked]
) -> dict[int, tuple[float, str, RelationOption]]:
    """By plan index, the readings coordinated names agree on. `plans`: per name in question order, whether it
    stands beside the one before ("X *and* Y") and what its relation was read from (its clause's phrase and
    role): a name beside the one before, read from the same, is of its group. `rank`: a name's ranked options."""
    groups: list[list[int]] = []
    for index, (beside, read_from) in enumerate(plans):
        if index and beside and read_from == plans[index - 1][1]:
            groups[-1].append(index)
        else:
            groups.append([index])
    agreed: dict[int, tuple[float, str, RelationOption]] = {}
    for group in (g for g in groups if len(g) > 1):
        for index, reading in zip(group, agreed_readings([rank(i) for i in group]), strict=True):
            if reading is not None:
                agreed[index] = reading
    return agreed
