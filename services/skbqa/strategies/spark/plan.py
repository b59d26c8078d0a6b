"""SPARK's plan language and the defensive parser of the LLM's reply (see docs/spark.md).

A plan is one JSON object:

    {"target_type": "disease",
     "steps": [
       {"id": "g1", "cypher": "MATCH (d:disease)-[:disease_has_phenotype]->(p:phenotype {name: 'Seizure'}) RETURN d"},
       {"id": "s1", "search": "preeclampsia", "type": "disease", "k": 20, "within": "g1"},
       {"id": "c1", "union": ["s1", "g1"]}],
     "answer": "s1"}

Step kinds (the paper's two tools, plus how their results combine):
- search: semantic candidate generation, `{"search": text, "type": label, "k": n}`; `within` restricts it to an
  earlier step's nodes (ranking a graph result by a description).
- cypher: structural expansion, `{"cypher": "MATCH ... RETURN v"}` in skbqa's Cypher subset; `from` binds
  variables to earlier steps' nodes, `{"from": {"d": "s1"}}` ("then expand": walk the graph from them).
- intersect / union: `{"intersect": [ids]}`, `{"union": [ids]}` over earlier steps.
`answer` names the step whose nodes answer the question (default: the last step); `target_type` is the label of
the answers (used when the plan returns nothing).

The reply is untrusted: `parse_plan` never raises. It strips `<think>` blocks, caps the input, finds the JSON
(fenced or inline; a bare list of steps and a `{"plan": {...}}` wrapper are accepted; one trailing-comma repair),
reads each step on its own (a bad step is dropped with a warning, the rest is kept), accepts common aliases
(`{"tool": "search", "query": ...}`), bounds every size (steps, `k`, text, Cypher, ids), and lets a step refer
only to steps *before* it, so a plan is always a small acyclic pipeline. A reply without JSON but with a Cypher
query becomes a one-step plan. Labels are not checked here: the executor resolves them against the schema.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from skbqa.stages.parse.llm import strip_reasoning

MAX_REPLY_CHARS = 32_000  # a plan is a few hundred characters; the cap bounds the JSON scan
MAX_RAW_CHARS = 1_000_000  # before `<think>` blocks are stripped (reasoning can be long; the client caps at 8 MB)
MAX_STEPS = 8
DEFAULT_SEARCH_K = 20
MAX_SEARCH_K = 100
MAX_TEXT_CHARS = 300  # a search phrase
MAX_CYPHER_CHARS = 4_000  # below the Cypher parser's own cap; a longer query is not a "simple" one
MAX_ID_CHARS = 32
MAX_LABEL_CHARS = 64
MAX_JSON_STARTS = 16  # positions tried for `raw_decode`: bounds the scan to O(16 · reply)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_CYPHER = re.compile(r"\bMATCH\b.*\bRETURN\b", re.IGNORECASE | re.DOTALL)
_TOOL_KEYS = ("tool", "op", "action", "kind")
_TOOL_ALIASES = {
    "search": "search",
    "semantic_search": "search",
    "semantic": "search",
    "vector_search": "search",
    "hnsw": "search",
    "cypher": "cypher",
    "graph": "cypher",
    "graph_query": "cypher",
    "intersect": "intersect",
    "intersection": "intersect",
    "and": "intersect",
    "union": "union",
    "or": "union",
}
_PAYLOAD_KEYS = ("query", "text", "input", "inputs", "args", "steps", "of")

CombineOp = Literal["intersect", "union"]


@dataclass(frozen=True)
class SearchStep:
    id: str
    text: str
    type: str | None = None  # a node label as the LLM wrote it; resolved against the schema by the executor
    k: int = DEFAULT_SEARCH_K
    within: str | None = None  # an earlier step whose nodes bound the search

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.within,) if self.within else ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "search": self.text, "type": self.type, "k": self.k}
        return out | ({"within": self.within} if self.within else {})


@dataclass(frozen=True)
class CypherStep:
    id: str
    cypher: str
    bind: tuple[tuple[str, str], ...] = ()  # (variable, earlier step id): the variable starts as that step's nodes

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(ref for _, ref in self.bind))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "cypher": self.cypher}
        return out | ({"from": dict(self.bind)} if self.bind else {})


@dataclass(frozen=True)
class CombineStep:
    id: str
    op: CombineOp
    inputs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, self.op: list(self.inputs)}


Step = SearchStep | CypherStep | CombineStep


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None  # the id of the step whose nodes answer the question
    target_type: str | None = None  # as the LLM wrote it
    warnings: list[str] = field(default_factory=list)
    problem: str | None = None  # why the reply holds no usable plan (then `steps` is empty)

    @property
    def usable(self) -> bool:
        return self.problem is None and bool(self.steps)

    def step(self, step_id: str) -> Step | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_type": self.target_type,
            "steps": [s.to_dict() for s in self.steps],
            "answer": self.answer,
        }


# --- the JSON ---------------------------------------------------------------------------------------------------


def _json_values(text: str) -> Iterator[tuple[Any, bool]]:
    """JSON objects and arrays in `text`, fenced blocks first, each with whether it needed the trailing-comma
    repair. At most `MAX_JSON_STARTS` start positions per source, so a hostile reply cannot make this quadratic."""
    decoder = json.JSONDecoder()
    sources = [*_FENCE.findall(text), text]
    for repaired in (False, True):
        for source in sources:
            if repaired:
                source = _TRAILING_COMMA.sub(r"\1", source)
            starts = [m.start() for m in re.finditer(r"[{\[]", source)][:MAX_JSON_STARTS]
            for start in starts:
                try:
                    value, _ = decoder.raw_decode(source, start)
                except (ValueError, RecursionError):  # RecursionError: hostile nesting depth
                    continue
                if isinstance(value, dict | list) and value:
                    yield value, repaired


def _find_plan(text: str) -> tuple[dict[str, Any] | None, bool, bool]:
    """(the plan object, repaired, whether any JSON was found): the first JSON value that holds steps."""
    found = False
    for value, repaired in _json_values(text):
        found = True
        data = _plan_object(value)
        steps = data.get("steps") if data is not None else None
        if data is not None and (not isinstance(steps, list) or any(isinstance(s, dict) for s in steps)):
            return data, repaired, True
    return None, False, found


def _plan_object(value: Any) -> dict[str, Any] | None:
    """The object holding `steps`: the value itself, a `plan` wrapper, or a bare list of steps."""
    if isinstance(value, list):
        return {"steps": value}
    if not isinstance(value, dict):
        return None
    if "steps" in value:
        return value
    inner = value.get("plan")
    if isinstance(inner, dict) and "steps" in inner:
        return inner
    if isinstance(inner, list):
        return {**value, "steps": inner}
    if any(key in value for key in ("search", "cypher", "intersect", "union", *_TOOL_KEYS)):
        return {"steps": [value]}  # a single step on its own
    return None


# --- fields -----------------------------------------------------------------------------------------------------


def _text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:limit] if text else None


def _label(value: Any, where: str, warnings: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        warnings.append(f"{where}: type {value!r} is not a string; ignored")
        return None
    return value.strip()[:MAX_LABEL_CHARS] or None


def _k(value: Any, where: str, warnings: list[str]) -> int:
    if value is None:
        return DEFAULT_SEARCH_K
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and value.strip().isdecimal():
        number = float(int(value.strip()[:9]))
    if number is None or not math.isfinite(number):
        warnings.append(f"{where}: k {str(value)[:20]!r} is not a number; {DEFAULT_SEARCH_K} used")
        return DEFAULT_SEARCH_K
    k = int(number)
    if not 1 <= k <= MAX_SEARCH_K:
        clamped = min(max(k, 1), MAX_SEARCH_K)
        warnings.append(f"{where}: k {k} outside 1..{MAX_SEARCH_K}; {clamped} used")
        return clamped
    return k


def _ref(value: Any, where: str, known: list[str], warnings: list[str]) -> str | None:
    """A reference to an earlier step; anything else (later, unknown, malformed) is dropped with a warning."""
    ref = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else None
    if ref in known:
        return ref
    warnings.append(f"{where}: {str(value)[:40]!r} is not an earlier step; reference dropped")
    return None


def _canonical(raw: dict[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    """`{"tool": "semantic_search", "query": ...}` and similar shapes → the documented keys."""
    if any(key in raw for key in ("search", "cypher", "intersect", "union")):
        return raw
    tool = next((raw[key] for key in _TOOL_KEYS if isinstance(raw.get(key), str)), None)
    kind = _TOOL_ALIASES.get(tool.strip().lower()) if tool else None
    payload = next((raw[key] for key in _PAYLOAD_KEYS if key in raw), None)
    if kind is None or payload is None:
        return raw
    warnings.append(f"{where}: read {tool!r} as a {kind} step")
    return {**raw, kind: payload}


# --- steps ------------------------------------------------------------------------------------------------------


def _step_id(raw: dict[str, Any], index: int, known: list[str], warnings: list[str]) -> str:
    value = raw.get("id")
    given = (
        str(value).strip()[:MAX_ID_CHARS] if isinstance(value, str | int) and not isinstance(value, bool) else ""
    )
    if given and given not in known:
        return given
    fresh = f"step{index + 1}"
    while fresh in known:
        fresh += "_"
    if given:
        warnings.append(f"step {index + 1}: duplicate id {given!r} renamed {fresh!r}")
    return fresh


def _read_step(raw: Any, index: int, known: list[str], warnings: list[str]) -> Step | None:
    where = f"step {index + 1}"
    if not isinstance(raw, dict):
        warnings.append(f"{where}: not a JSON object; dropped")
        return None
    raw = _canonical(raw, where, warnings)
    step_id = _step_id(raw, index, known, warnings)
    where = f"step {step_id!r}"
    if "search" in raw:
        text = _text(raw["search"], MAX_TEXT_CHARS)
        if text is None:
            warnings.append(f"{where}: empty or non-text search; dropped")
            return None
        within = raw.get("within")
        return SearchStep(
            step_id,
            text,
            _label(raw.get("type", raw.get("label")), where, warnings),
            _k(raw.get("k"), where, warnings),
            None if within is None else _ref(within, where, known, warnings),
        )
    if "cypher" in raw:
        cypher = raw["cypher"]
        if not isinstance(cypher, str) or not cypher.strip():
            warnings.append(f"{where}: empty or non-text cypher; dropped")
            return None
        if len(cypher) > MAX_CYPHER_CHARS:
            warnings.append(f"{where}: Cypher longer than {MAX_CYPHER_CHARS} characters; dropped")
            return None
        return CypherStep(step_id, cypher.strip(), _bindings(raw.get("from"), where, known, warnings))
    for op in ("intersect", "union"):
        if op in raw:
            refs = raw[op] if isinstance(raw[op], list) else [raw[op]]
            inputs = [r for r in (_ref(v, where, known, warnings) for v in refs[:MAX_STEPS]) if r is not None]
            if not inputs:
                warnings.append(f"{where}: {op} of no earlier step; dropped")
                return None
            return CombineStep(step_id, op, tuple(dict.fromkeys(inputs)))  # type: ignore[arg-type]
    keys = ", ".join(sorted(str(k) for k in raw)[:6])
    warnings.append(f"{where}: no search, cypher, intersect or union (keys: {keys}); dropped")
    return None


def _bindings(value: Any, where: str, known: list[str], warnings: list[str]) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        warnings.append(f"{where}: 'from' must map variables to step ids; ignored")
        return ()
    bound: list[tuple[str, str]] = []
    for variable, ref in list(value.items())[:MAX_STEPS]:
        if not isinstance(variable, str) or not _VARIABLE.fullmatch(variable):
            warnings.append(f"{where}: 'from' key {str(variable)[:40]!r} is not a variable name; ignored")
            continue
        step = _ref(ref, where, known, warnings)
        if step is not None:
            bound.append((variable, step))
    return tuple(bound)


# --- API --------------------------------------------------------------------------------------------------------


def parse_plan(reply: object) -> Plan:
    """The plan in an LLM reply; never raises. An unusable reply gives a plan with `problem` set and no steps."""
    warnings: list[str] = []
    if not isinstance(reply, str):
        return Plan(problem=f"expected text, got {type(reply).__name__}")
    text = strip_reasoning(reply[:MAX_RAW_CHARS])
    if len(text) > MAX_REPLY_CHARS:
        warnings.append(f"reply longer than {MAX_REPLY_CHARS} characters; the rest was ignored")
        text = text[:MAX_REPLY_CHARS]
    data, repaired, found = _find_plan(text)
    if data is None:
        if len(text) <= MAX_CYPHER_CHARS and _BARE_CYPHER.search(text):
            warnings.append("no JSON plan; the reply was read as one Cypher query")
            return Plan([CypherStep("step1", text.strip())], "step1", None, warnings)
        problem = "the JSON in the reply holds no plan steps" if found else "no JSON plan in the reply"
        return Plan(warnings=warnings, problem=problem)
    if repaired:
        warnings.append("trailing commas removed from the JSON")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        return Plan(warnings=warnings, problem="'steps' is not a list")
    if len(raw_steps) > MAX_STEPS:
        warnings.append(f"{len(raw_steps)} steps; only the first {MAX_STEPS} are used")
    steps: list[Step] = []
    for index, raw in enumerate(raw_steps[:MAX_STEPS]):
        step = _read_step(raw, index, [s.id for s in steps], warnings)
        if step is not None:
            steps.append(step)
    if not steps:
        return Plan(warnings=warnings, problem="no usable step")
    ids = [s.id for s in steps]
    answer = data.get("answer")
    if answer is not None and (not isinstance(answer, str | int) or str(answer).strip() not in ids):
        warnings.append(f"answer {str(answer)[:40]!r} is not a step; the last step answers")
        answer = None
    target_type = _label(data.get("target_type"), "plan", warnings)
    return Plan(steps, str(answer).strip() if answer is not None else ids[-1], target_type, warnings)
