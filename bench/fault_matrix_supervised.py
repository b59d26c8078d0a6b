"""The fault matrix under the stack's own supervision (docs/faults.md): real stacks started by `skbqa stack up` on
the biomed sample index, a bounded load, kill -9 by the PID the stack reports, and nothing restarted by this
script — the supervisor does it, and each row says how long the stack took to answer normally again.

    python bench/fault_matrix_supervised.py                 # every row (~20 min on 2 cores), writes the file
    python bench/fault_matrix_supervised.py --stacks single  # only the rows of one stack
    python bench/fault_matrix_supervised.py --print          # the table of an existing file

Five stacks, one after another (never two at once on 2 cores): `single` (one process per stage, Triton, Ray in
the reranker service: every stage's kill -9 with 1 replica, Triton, Ray, the memory broker), `replicas2` (every stage
with 2 replicas, `--no-ray`: no default request reaches Ray, and two private Ray instances would only load the
cores; each stage's kill -9 of one replica), `durable` (`--durable`: the broker on s3 storage, with the object
store `stack up` picks by default; killed), `edges` (`--prometheus --colocate parser+symbols+grounding
--no-ray`: the gateway, Prometheus, the co-located group's process and the supervisor itself killed; stopped with
its supervisor dead, and checked for processes `stack down` left) and `clients` (`--replicas gateway=2 --no-ray
--no-triton`, the parser on an LLM endpoint outside the stack, the load through the project's client on both
gateways: one gateway killed, the LLM endpoint killed; tests/integration/supervised_endpoints.py). Rows are merged into an existing file by
(stack, fault). On a shared machine wrap the run in ``flock /tmp/skbqa-heavy.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.fault_stack import QUESTIONS  # noqa: E402
from tests.integration.supervised_endpoints import (  # noqa: E402
    CLIENTS_STACK,
    LlmEndpoint,
    clients_faults,
    llm_references,
)
from tests.integration.supervised_faults import Fault, Load, References, run_row  # noqa: E402
from tests.integration.supervised_stack import StackConfig, SupervisedStack  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "fault-matrix-supervised.json"
# Set once the run has re-executed itself on a copy of the package (see `on_snapshot`).
SNAPSHOT_ENV = "SKBQA_SUPERVISED_SNAPSHOT"
STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")
RERANKED = {"reranker": "local"}  # step 8 on the reranker service's Ray Serve deployment
GROUP = "parser+symbols+grounding"  # the co-located group docs/distributed.md measures

STACKS: dict[str, tuple[StackConfig, list[Fault]]] = {
    "single": (
        StackConfig("single", replicas={}),
        [Fault(f"kill -9 of the {role} service (1 replica)", f"{role}-0") for role in STAGES]
        + [
            Fault("kill -9 of the Triton encoder server", "triton"),
            Fault(
                "kill -9 of Ray (gcs_server + raylet in the reranker service), calls with reranker=local",
                "reranker-0",
                ray=True,
                options=RERANKED,
            ),
            Fault("kill -9 of the broker (memory storage)", "broker"),
        ],
    ),
    "replicas2": (
        StackConfig("replicas2", replicas=dict.fromkeys(STAGES, 2), ray=False),
        [Fault(f"kill -9 of one {role} replica of 2", f"{role}-0") for role in STAGES],
    ),
    "durable": (
        StackConfig("durable", replicas={}, ray=False, durable=True),
        [Fault("kill -9 of the broker (--durable: s3 storage)", "broker")],
    ),
    # The processes outside the stage chain, and a co-located group. `--no-ray` as for `replicas2`; the supervisor
    # row last, and this stack is stopped with its supervisor killed (`DOWN_WITHOUT_SUPERVISOR`).
    "edges": (
        StackConfig("edges", replicas={}, ray=False, prometheus=True, colocate=(GROUP,)),
        [
            Fault("kill -9 of the gateway (1 replica; clients see UNAVAILABLE while it is down)", "gateway-0"),
            Fault("kill -9 of Prometheus (--prometheus)", "prometheus"),
            Fault(f"kill -9 of the co-located group {GROUP} (--colocate, 1 replica)", f"{GROUP}-0"),
            Fault("kill -9 of the supervisor itself (nothing restarts it)", "supervisor", supervisor=True),
        ],
    ),
    # Two gateways, loaded through the project's client on both; the parser service on an LLM endpoint outside the
    # stack. Its faults need that endpoint, so they are made when the stack is (`clients_faults`).
    "clients": (CLIENTS_STACK, []),
}
DOWN_WITHOUT_SUPERVISOR = {"edges"}


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| fault | outcome | sent | answered | clear status | lost | duplicates delivered / dropped | s "
        "| recovered after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['fault']} | not measured: {r['error']} | | | | | | | |")
            continue
        clear = ", ".join(f"{n} {code}" for code, n in sorted(r["clear_status"].items())) or "0"
        lost = str(r["lost"]) + (
            " (" + ", ".join(f"{n} {why}" for why, n in r["lost_reasons"].items()) + ")" if r["lost"] else ""
        )
        recovered = "never" if r["recovered_after_s"] is None else f"{r['recovered_after_s']} s"
        lines.append(
            f"| {r['fault']} | {r['outcome']} | {r['sent']} | {r['answered']} | {clear} | {lost} "
            f"| {r['duplicates_delivered']} / {r['duplicates_dropped']} | {r['seconds']} | {recovered} |"
        )
    return "\n".join(lines)


def merged(out: Path, rows: list[dict[str, Any]], stacks: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The rows and stacks of `out` with these in place of the same (stack, fault) — a run of some rows keeps
    the others; new rows go last."""
    if not out.is_file():
        return rows, stacks
    old = json.loads(out.read_text())
    new = {(r.get("stack"), r["fault"]): r for r in rows}
    kept = [new.pop((r.get("stack"), r["fault"]), r) for r in old.get("rows", [])]
    return kept + list(new.values()), {**old.get("stacks", {}), **stacks}


def save(out: Path, rows: list[dict[str, Any]], stacks: dict[str, Any], load: Load) -> None:
    rows, stacks = merged(out, rows, stacks)
    document = {
        "about": "fault x outcome x calls under the stack's own supervision (no harness restarts); written by "
        "bench/fault_matrix_supervised.py",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": vars(load),
        "code": code_version(),
        "stacks": stacks,
        "rows": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(out)


def on_snapshot(work: Path) -> None:
    """Re-execute this script with a copy of services/skbqa first on PYTHONPATH, which every process of the stack
    inherits. A restarted process imports the code again: on a tree others are editing it would run other code
    than its peers and than the reference engine, and a changed ranking would read as a wrong answer."""
    source = work / "src"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(ROOT / "services" / "skbqa", source / "skbqa", ignore=shutil.ignore_patterns("__pycache__"))
    path = os.pathsep.join(p for p in (str(source), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, SNAPSHOT_ENV: str(source)}
    os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:], "--work", str(work)], env)


def code_version() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    return {"head": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "services")),
            "snapshot": os.environ.get(SNAPSHOT_ENV)}  # fmt: skip


def build_index(work: Path) -> Path:
    from tests.conftest import SAMPLE_BUNDLE

    from skbqa.ingest.builder import ingest
    from skbqa.models.local_encoder import load_encoder

    index = work / "index"
    if not (index / "manifest.json").is_file():
        ingest(SAMPLE_BUNDLE, index, load_encoder("onnx-int8"), progress=False)
    return index


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.models.local_encoder import load_encoder

    work = Path(args.work or tempfile.mkdtemp(prefix="skbqa-supervised-"))
    index = args.index or build_index(work)
    engine = EmbeddedEngine.open(index, encoder=load_encoder("onnx-int8"))
    refs = References.of(engine, QUESTIONS)
    load = Load(rate_per_s=args.rate, clients=args.clients, max_calls=args.max_calls, deadline_s=args.deadline)
    rows: list[dict[str, Any]] = []
    stacks: dict[str, Any] = {}
    for name in args.stacks:
        config, faults = STACKS[name]
        stack: SupervisedStack | None = None
        endpoint = LlmEndpoint() if name == "clients" else None
        try:
            if endpoint is not None:
                endpoint.start()
                refs.llm = llm_references(engine, QUESTIONS, endpoint)
                faults = clients_faults(endpoint, load.recover_within_s)
                with endpoint.exported():
                    stack = SupervisedStack.up(index, work / f"stack-{name}", config)
            else:
                stack = SupervisedStack.up(index, work / f"stack-{name}", config)
            stacks[name] = {
                "up_args": config.up_args(),
                "up_seconds": stack.up_seconds,
                "processes": stack.names(),
                "broker_argv": stack.record("broker")["argv"][2:],  # its storage, and the object store's
            }
            for fault in faults:
                if args.only and not any(word in fault.label for word in args.only):
                    continue
                print(f"== {fault.label}", flush=True)
                try:
                    row = run_row(stack, fault, refs, load, QUESTIONS)
                except Exception as exc:  # one row's failure is recorded; the stack may still serve the next
                    traceback.print_exc()
                    row = {"fault": fault.label, "target": fault.target, "error": str(exc).splitlines()[0][:300]}
                row["stack"] = name
                rows.append(row)
                save(args.out, rows, stacks, load)
                print(markdown([row]).splitlines()[-1], flush=True)
        except Exception as exc:
            traceback.print_exc()
            stacks[name] = {"up_args": config.up_args(), "error": str(exc).splitlines()[0][:300]}
            save(args.out, rows, stacks, load)
        finally:
            if stack is not None:
                if name in DOWN_WITHOUT_SUPERVISOR:  # `stack down` must stop everything without it too
                    stack.kill("supervisor")
                    stacks.setdefault(name, {})["down_with_supervisor_killed"] = True
                left = stack.down()
                stacks.setdefault(name, {})["left_running_after_down"] = left
                save(args.out, rows, stacks, load)
            if endpoint is not None:
                endpoint.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--print", action="store_true", help="print the table of --out without running")
    parser.add_argument("--stacks", nargs="+", choices=list(STACKS), default=list(STACKS))
    parser.add_argument("--only", nargs="+", default=[], help="only the rows whose fault names one of these")
    parser.add_argument("--index", type=Path, default=None, help="an index of data/biomed-sample (else built)")
    parser.add_argument(
        "--work", type=Path, default=None, help="index, stack state and logs (default: a temp dir)"
    )
    parser.add_argument("--max-calls", type=int, default=Load.max_calls)
    parser.add_argument("--clients", type=int, default=Load.clients)
    parser.add_argument("--rate", type=float, default=Load.rate_per_s, help="calls started per second")
    parser.add_argument("--deadline", type=float, default=Load.deadline_s, help="each call's client deadline, s")
    parser.add_argument("--no-snapshot", action="store_true", help="run the live tree (see on_snapshot)")
    parser.add_argument(
        "--adopt", type=Path, default=None, help="merge the rows of another run's file into --out, run nothing"
    )
    args = parser.parse_args()
    if args.adopt:
        other = json.loads(args.adopt.read_text())
        save(args.out, other["rows"], {}, Load(**other["load"]))
        args.print = True
    if not args.print and not args.no_snapshot and SNAPSHOT_ENV not in os.environ:
        on_snapshot(args.work or Path(tempfile.mkdtemp(prefix="skbqa-supervised-")))
    if not args.print:
        run(args)
    rows = json.loads(args.out.read_text())["rows"]
    print(markdown(rows))
    return 1 if any("error" in r or r["lost"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
