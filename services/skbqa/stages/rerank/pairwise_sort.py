"""Batched binary insertion sort, written as coroutines so independent comparisons can run concurrently.

Items are 0..k-1 in prior order. The sorted list starts as [0]; the next batch of items (as many as are already
sorted, at most `max_batch`) is binary-searched into it *at the same time*: in every round each item of the
batch asks one comparison against the midpoint of its remaining interval (in the first round the same pivot
for all of them), so a batch costs ⌈log2(n+1)⌉ rounds instead of one insertion after another. Items of a batch
that land in the same gap were never compared with each other; each such group is sorted by the same procedure,
all groups concurrently. The batch then joins the sorted list and the next batch starts.

Comparisons: every item is binary-searched into the sorted list (≤ ⌈log2 k⌉ each) plus the few extra needed
inside colliding groups — about log2(k!) ≤ k·log2 k in total, like the paper's sequential binary insertion sort
(measured over random orders: ≈ 64 for k = 20, where Table 7 reports ≈ 3.0k = 60). Sequential rounds: the
sorted list doubles per batch, so there are ⌈log2 k⌉ batches of ≤ ⌈log2 k⌉ rounds plus the group rounds:
≈ 19 rounds for k = 20 (≈ 63 for k = 100, against ≈ 540 comparisons).

Under a transitive oracle the result is exactly sorted. The sorted list is always a sorted prefix of the prior
order, which is what a deadline returns (followed by the other items in prior order).

Coroutine protocol: a task yields a non-empty list of comparisons (a, b) and is sent back a list of booleans,
True when a ranks before b; it returns its result through StopIteration.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import TypeVar

R = TypeVar("R")
Comparison = tuple[int, int]
Task = Generator[list[Comparison], list[bool], R]

DEFAULT_MAX_BATCH = 16


def binary_insert(item: int, ordered: Sequence[int]) -> Task[int]:
    """The gap (0..len(ordered)) where `item` belongs: before every element it beats, after the others."""
    lo, hi = 0, len(ordered)
    while lo < hi:
        mid = (lo + hi) // 2
        (before,) = yield [(item, ordered[mid])]
        if before:
            hi = mid
        else:
            lo = mid + 1
    return lo


def parallel(tasks: Sequence[Task[R]]) -> Task[list[R]]:
    """Run tasks side by side: each round carries the next comparisons of every unfinished task."""
    results: dict[int, R] = {}
    asked: dict[int, list[Comparison]] = {}
    for i, task in enumerate(tasks):
        _advance(task, i, None, asked, results)
    while asked:
        order = list(asked)
        answers = yield [c for i in order for c in asked[i]]
        current, asked = asked, {}
        offset = 0
        for i in order:
            n = len(current[i])
            _advance(tasks[i], i, answers[offset : offset + n], asked, results)
            offset += n
    return [results[i] for i in range(len(tasks))]


def _advance(
    task: Task[R],
    index: int,
    answers: list[bool] | None,
    asked: dict[int, list[Comparison]],
    results: dict[int, R],
) -> None:
    try:
        request = next(task) if answers is None else task.send(answers)
    except StopIteration as stop:
        results[index] = stop.value
        return
    if not request:
        raise ValueError("a sorting task asked for no comparison")  # would stall the round loop
    asked[index] = request


def insert_batch(
    ordered: Sequence[int], batch: Sequence[int], max_batch: int = DEFAULT_MAX_BATCH
) -> Task[list[int]]:
    """`ordered` with every item of `batch` inserted at its place."""
    gaps = yield from parallel([binary_insert(item, ordered) for item in batch])
    groups: dict[int, list[int]] = {}
    for item, gap in zip(batch, gaps, strict=True):
        groups.setdefault(gap, []).append(item)  # batch order = prior order within a group
    colliding = [gap for gap, members in groups.items() if len(members) > 1]
    settled = yield from parallel([sort_items(groups[gap], max_batch) for gap in colliding])
    groups.update(zip(colliding, settled, strict=True))
    merged: list[int] = []
    for gap in range(len(ordered) + 1):
        merged.extend(groups.get(gap, ()))
        if gap < len(ordered):
            merged.append(ordered[gap])
    return merged


def next_batch(sorted_count: int, remaining: Sequence[int], max_batch: int) -> list[int]:
    """As many items as are already sorted (the list doubles per batch), at most `max_batch`."""
    return list(remaining[: max(1, min(sorted_count, max_batch))])


def sort_items(items: Sequence[int], max_batch: int = DEFAULT_MAX_BATCH) -> Task[list[int]]:
    if len(items) <= 1:
        return list(items)
    ordered = [items[0]]
    done = 1
    while done < len(items):
        batch = next_batch(len(ordered), items[done:], max_batch)
        ordered = yield from insert_batch(ordered, batch, max_batch)
        done += len(batch)
    return ordered


def run_sync(task: Task[R], before: Callable[[int, int], bool]) -> tuple[R, int, int]:
    """Drive a task with a synchronous comparator: (result, comparisons, rounds). For tests and benchmarks."""
    comparisons = rounds = 0
    try:
        request = next(task)
        while True:
            rounds += 1
            comparisons += len(request)
            request = task.send([before(a, b) for a, b in request])
    except StopIteration as stop:
        return stop.value, comparisons, rounds
