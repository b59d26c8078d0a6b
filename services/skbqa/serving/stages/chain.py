"""Co-located stages: one service running several consecutive stages of the pipeline in one process.

Each broker hop costs a fetch cycle (~9 ms on tansu here) while the light stages compute in 1–5 ms, so a
deployment may run, say, `parser+symbols+grounding` as one service: it consumes the first stage's input topic in
the first stage's consumer group, runs the cores in sequence in process (each through `run_stage`, so answers are
the separate services' answers) and publishes only the last core's forward, plus every answer any core emits.
The topics between its stages carry nothing and have no consumer group; the gateway is told which stages are
co-located (`ServiceSettings.colocated`) so its stage-liveness probe does not watch them.

The separately deployable form stays the default: a role without "+" is one stage, exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from skbqa.common.errors import InvalidInputError

# The stages in pipeline order (equal to stages.core.ROLES, tests/unit/test_latency_trace.py): taken from the light
# hops module so the stack's CLI can validate a layout without importing the stage cores and their strategies.
from skbqa.observability.hops import STAGES as ROLES

if TYPE_CHECKING:
    from skbqa.serving.stages.core import StageCore, StageMessage, StageOutput

SEPARATOR = "+"


def stage_roles(role: str) -> tuple[str, ...]:
    """The stages a served role runs, in pipeline order: ("ranking",) for "ranking", and the members of a
    co-located role such as "parser+symbols+grounding". InvalidInputError unless the members are two or more
    stages, each named once, consecutive in pipeline order."""
    names = tuple(role.split(SEPARATOR))
    unknown = [name for name in names if name not in ROLES]
    if unknown:
        raise InvalidInputError(
            f"unknown stage {unknown[0]!r} in role {role!r}; stages, in pipeline order: {', '.join(ROLES)}"
        )
    if len(names) == 1:
        return names
    if len(set(names)) < len(names):
        raise InvalidInputError(f"role {role!r} names a stage twice")
    positions = sorted(ROLES.index(name) for name in names)
    if names != ROLES[positions[0] : positions[0] + len(names)]:
        expected = SEPARATOR.join(ROLES[positions[0] : positions[-1] + 1])
        raise InvalidInputError(
            f"co-located stages must be consecutive and in pipeline order ({' → '.join(ROLES)}); "
            f"got {role!r}, did you mean {expected!r}?"
        )
    return names


def is_colocated(role: str | None) -> bool:
    return role is not None and SEPARATOR in role


def colocated_groups(groups: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """Validate a deployment's co-located groups ("parser+symbols+grounding", …): each a valid co-located role,
    no stage in two of them."""
    parsed = []
    seen: set[str] = set()
    for group in groups:
        if not is_colocated(group):
            raise InvalidInputError(f"a co-located group names two or more stages joined by '+', got {group!r}")
        roles = stage_roles(group)
        twice = seen.intersection(roles)
        if twice:
            raise InvalidInputError(f"stage {sorted(twice)[0]!r} is in two co-located groups")
        seen.update(roles)
        parsed.append(roles)
    return tuple(parsed)


def service_roles(groups: Sequence[str]) -> tuple[str, ...]:
    """The stage services of a deployment, in pipeline order: each co-located group once (under its "a+b" role)
    in place of its members, every other stage alone."""
    first_of = {roles[0]: SEPARATOR.join(roles) for roles in colocated_groups(groups)}
    inside = {role for roles in colocated_groups(groups) for role in roles[1:]}
    return tuple(first_of.get(role, role) for role in ROLES if role not in inside)


class StageChain:
    """Several consecutive stage cores run as one: a `StageCore` for the shells that take one (the gRPC
    `Stage/Process` servicer), and the list of cores the bus worker steps through itself (worker.py) so each
    stage keeps its own metrics, retries and latency-trace hops."""

    def __init__(self, cores: Sequence[StageCore], run: Callable[[StageCore, StageMessage], StageOutput]) -> None:
        """`run`: how one core processes a message (registry.run_stage, which answers around a lost backend)."""
        self.cores = tuple(cores)
        self._run = run
        self.role = SEPARATOR.join(core.role for core in self.cores)
        self.input_topic = self.cores[0].input_topic
        self.output_topic = self.cores[-1].output_topic

    def process(self, message: StageMessage) -> StageOutput:
        """Every core in turn on the previous one's forward; the answers of all, the last forward. Stops early
        when a core ends the request (no forward)."""
        from skbqa.serving.stages.core import StageOutput

        answers = []
        output = StageOutput(forward=message)
        for core in self.cores:
            assert output.forward is not None
            output = self._run(core, output.forward)
            answers += output.answers
            if output.forward is None:
                break
        return StageOutput(output.forward, answers)

    def warm(self) -> None:
        for core in self.cores:
            core.warm()

    def probe(self) -> str:
        return next((reason for reason in (core.probe() for core in self.cores) if reason), "")


def members(core: StageCore | StageChain) -> tuple[StageCore, ...]:
    """The single cores a core stands for: a chain's members, or the core itself."""
    return core.cores if isinstance(core, StageChain) else (core,)
