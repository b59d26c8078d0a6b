"""`skbqa stack up|down|status`: the local distributed stack (docs/distributed.md)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError


def add_stack_parser(sub: Any) -> None:
    p = sub.add_parser("stack", help="start / stop the local distributed stack (broker, Triton, services, Ray)")
    p.add_argument("action", choices=("up", "down", "status", "restart"))
    p.add_argument(
        "name",
        nargs="?",
        default=None,
        help="restart: a process (ranking-1), a role (ranking, broker) or the supervisor",
    )
    p.add_argument("--index", type=Path, default=None, help="index directory (up)")
    p.add_argument("--dir", type=Path, default=Path(".skbqa/stack"), help="state and logs")
    p.add_argument("--port", type=int, default=50051, help="gateway gRPC port (0 = any)")
    p.add_argument("--replicas", action="append", default=[], metavar="ROLE=N", help="e.g. ranking=2")
    p.add_argument(
        "--colocate",
        action="append",
        default=[],
        metavar="STAGE+STAGE",
        help="run consecutive stages as one process, e.g. parser+symbols+grounding (repeatable; default: a "
        "process per stage)",
    )
    p.add_argument("--no-triton", action="store_true", help="services load the local encoder instead")
    p.add_argument("--no-ray", action="store_true", help="rerank in the reranker service's process")
    p.add_argument("--prometheus", action="store_true", help="also run Prometheus scraping every service")
    p.add_argument(
        "--durable",
        action="store_true",
        help="broker storage on s3 in STACK_DIR/broker-data (topics and committed offsets survive a broker crash)",
    )
    p.add_argument(
        "--s3-server",
        choices=("files", "moto", "s3rver"),
        default="files",
        help="--durable's object store: files (default: on disk, fastest), moto (in memory) or s3rver (docs/kafka.md)",
    )
    p.add_argument(
        "--snapshots",
        nargs="?",
        const="own",
        default=None,
        metavar="s3://BUCKET/PREFIX",
        help="ship each folded snapshot through an object store and give every other process an index directory "
        "of its own that fetches them: alone, the stack's own S3 server (STACK_DIR/snapshots-data); with a URL, "
        "an external store reached through the AWS environment (docs/updates.md)",
    )
    p.add_argument(
        "--no-supervise", action="store_true", help="do not restart crashed processes (no supervisor process)"
    )


def _replicas(pairs: list[str]) -> dict[str, int]:
    out = {}
    for pair in pairs:
        role, _, count = pair.partition("=")
        if not count.isdigit():
            raise InvalidInputError(f"--replicas wants ROLE=N, got {pair!r}")
        out[role] = int(count)
    return out


def run_stack(args: argparse.Namespace) -> int:
    from skbqa.devstack.processes import read_state
    from skbqa.devstack.stack import LocalStack, StackOptions, stack_down
    from skbqa.devstack.supervisor import stack_restart

    if args.action == "down":
        stopped = stack_down(args.dir)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    if args.action == "restart":
        if not args.name:
            raise InvalidInputError("stack restart needs a process or role, e.g. skbqa stack restart ranking")
        restarted = stack_restart(args.dir, args.name)
        print(f"restarted: {', '.join(restarted)}")
        return 0
    if args.action == "status":
        state = read_state(args.dir)
        if not state:
            print(f"no stack recorded in {args.dir}")
            return 1
        restarts = state.get("restarts", {})
        width = max([14, *(len(record["name"]) for record in state["processes"])])  # co-located names are long
        for record in state["processes"]:
            print(
                f"{record['name']:<{width}} pid {record['pid']:<8} {process_health(record):<12} "
                f"restarts {restarts.get(record['name'], 0):<3} {served_version(record):<6} "
                f"{json.dumps(record['ports'])}"
            )
        from skbqa.devstack.stack_snapshots import SnapshotStore

        store = SnapshotStore.from_state(state)
        if store is not None:
            print(store.describe())
        gateways = state.get("ports", {}).get("gateways")
        if gateways:
            print(f"gateways: {gateways}  (clients: --server {gateways})")
        return 0
    if args.index is None:
        raise InvalidInputError("stack up needs --index DIR")
    options = StackOptions(
        index=args.index,
        directory=args.dir,
        gateway_port=args.port,
        replicas=_replicas(args.replicas),
        colocate=tuple(args.colocate),
        triton=not args.no_triton,
        ray=not args.no_ray,
        prometheus=args.prometheus,
        broker_storage="s3" if args.durable else "memory",
        broker_s3_server=args.s3_server,
        supervise=not args.no_supervise,
        snapshots=args.snapshots,
    )
    started = time.perf_counter()
    ports = LocalStack(options).up()
    print(f"stack up in {time.perf_counter() - started:.1f} s: gateway {ports['gateways']}")
    print(json.dumps(ports, indent=2))
    print(f"stop it with: skbqa stack down --dir {args.dir}")
    return 0


def served_version(record: dict[str, Any]) -> str:
    """`kb N`: the knowledge-base version a service serves (the updater: the newest it folded), read from its
    `skbqa_kb_version` gauge; "" for processes without one."""
    import urllib.request

    port = record.get("ports", {}).get("metrics")
    if not port or record["name"] == "triton":
        return ""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{int(port)}/metrics", timeout=2) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith("skbqa_kb_version{"):
                    return f"kb {float(line.rsplit(' ', 1)[1]):.0f}"
    except (OSError, ValueError):
        return ""
    return ""


def process_health(record: dict[str, Any]) -> str:
    """What a process answers now: gRPC health for services, a TCP accept for the broker, Prometheus and Triton;
    "exited" for a process that is not running (the supervisor restarts it)."""
    from skbqa.devstack.processes import alive, grpc_serving, tcp_open

    if not alive(int(record["pid"])):
        return "exited"
    ports = record.get("ports", {})
    if "grpc" in ports and record["name"] != "triton":
        try:
            return "SERVING" if grpc_serving(int(ports["grpc"])) else "NOT_SERVING"
        except Exception:
            return "unreachable"
    port = ports.get("kafka") or ports.get("http") or ports.get("grpc")
    if port:
        return "up" if tcp_open(int(port)) else "unreachable"
    return "running"
