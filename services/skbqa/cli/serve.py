"""`skbqa serve`: the embedded gRPC server (no --role) or one service of the distributed form (--role ROLE).

Every flag falls back to an `SKBQA_*` environment variable (the Helm chart sets those), then to its default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError
from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.settings import ROLE_HELP, ServiceSettings, env


def add_serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve the gRPC API (embedded), or one distributed service with --role")
    p.add_argument("--index", type=Path, default=None, help="index directory (SKBQA_INDEX)")
    p.add_argument(
        "--role",
        default=None,
        metavar="ROLE",
        help=f"distributed service to run: {ROLE_HELP}; 'all' is the gateway + every stage worker in one "
        "process (SKBQA_ROLE)",
    )
    p.add_argument(
        "--colocated",
        action="append",
        default=None,
        metavar="STAGE+STAGE",
        help="gateway and 'all': stages the deployment runs in one service (as its --role), so the gateway does "
        "not watch the topics between them; repeatable or comma-separated (SKBQA_COLOCATED)",
    )
    p.add_argument("--host", default=None, help="listen address (SKBQA_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="gRPC port (SKBQA_GRPC_PORT, default 50051; 0 = any)")
    p.add_argument("--metrics-port", type=int, default=None, help="serve /metrics here (SKBQA_METRICS_PORT)")
    p.add_argument("--bus", default=None, help="kafka://host:port or memory:// (SKBQA_BUS)")
    p.add_argument("--encoder", default=None, help="triton://host:8001/skbqa_encoder (SKBQA_ENCODER_URL)")
    p.add_argument("--vectors", default=None, help="milvus://host:19530 or a Milvus Lite .db (SKBQA_VECTORS_URL)")
    p.add_argument("--graph", default=None, help="nebula://host:9669/space (SKBQA_GRAPH_URL)")
    p.add_argument(
        "--snapshots",
        default=None,
        metavar="s3://BUCKET/PREFIX",
        help="updater: ship each folded snapshot here, for replicas with an index directory of their own "
        "(SKBQA_SNAPSHOTS_URL)",
    )
    p.add_argument(
        "--snapshots-keep",
        type=int,
        default=None,
        metavar="N",
        help="updater: keep the newest N shipped versions in the store, delete older ones (SKBQA_SNAPSHOTS_KEEP, "
        "default 3, at least 1)",
    )
    p.add_argument(
        "--s3-endpoint-url",
        default=None,
        help="S3-compatible endpoint of --snapshots and of the snapshots replicas fetch (SKBQA_S3_ENDPOINT_URL)",
    )
    p.add_argument(
        "--ray-address", default=None, help="Ray cluster for the reranker, or 'local' (SKBQA_RAY_ADDRESS)"
    )
    p.add_argument("--llm", action="store_true", help="use the LLM endpoint of SKBQA_LLM_* (docs/llm.md)")
    p.add_argument("--tls-cert", type=Path, default=None, help="gateway TLS certificate (SKBQA_TLS_CERT_FILE)")
    p.add_argument("--tls-key", type=Path, default=None, help="gateway TLS key (SKBQA_TLS_KEY_FILE)")
    p.add_argument(
        "--tls-client-ca", type=Path, default=None, help="require client certs (SKBQA_TLS_CLIENT_CA_FILE)"
    )
    p.add_argument(
        "--tokens-file", type=Path, default=None, help="bearer tokens, one per line (SKBQA_AUTH_TOKENS_FILE)"
    )
    p.add_argument(
        "--admin-tokens-file",
        type=Path,
        default=None,
        help="tokens that may also apply changes, one per line (SKBQA_ADMIN_TOKENS_FILE)",
    )
    p.add_argument(
        "--health-port", type=int, default=None, help="plaintext health-only port beside TLS (SKBQA_HEALTH_PORT)"
    )
    p.add_argument("--request-timeout", type=float, default=None, help="seconds (SKBQA_REQUEST_TIMEOUT_S, 30)")
    p.add_argument("--max-inflight", type=int, default=None, help="calls at once (SKBQA_MAX_INFLIGHT, 64)")
    p.add_argument(
        "--client-rate",
        type=float,
        default=None,
        help="requests/s per client: token, mTLS subject or address (SKBQA_CLIENT_RATE, 0 = off)",
    )
    p.add_argument(
        "--client-burst",
        type=int,
        default=None,
        help="requests above the rate (SKBQA_CLIENT_BURST, 0 = 1 s worth)",
    )
    p.add_argument(
        "--lag-interval",
        type=float,
        default=None,
        help="stage workers: seconds between Kafka lag reads for skbqa_kafka_lag (SKBQA_LAG_INTERVAL_S, 0 = off)",
    )
    p.add_argument(
        "--stage-stall",
        type=float,
        default=None,
        help="gateway: seconds messages may wait for a stage without progress before its health turns "
        "NOT_SERVING (SKBQA_STAGE_STALL_S, default 10, 0 = off)",
    )
    p.add_argument(
        "--resend-after",
        type=float,
        default=None,
        help="gateway: seconds a request may go without word while no stage holds it before it is sent again "
        "(SKBQA_RESEND_AFTER_S, default 5, 0 = off)",
    )
    p.add_argument(
        "--client-max-inflight",
        type=int,
        default=None,
        help="calls at once per client (SKBQA_CLIENT_MAX_INFLIGHT, 0 = off)",
    )


def _path(value: Path | None, name: str) -> Path | None:
    if value is not None:
        return value
    found = env(name)
    return Path(found) if found else None


def settings_from_args(args: argparse.Namespace) -> ServiceSettings:
    index = _path(args.index, "INDEX")
    if index is None:
        raise InvalidInputError("serve needs an index: --index DIR or SKBQA_INDEX")
    try:
        port = args.port if args.port is not None else int(env("GRPC_PORT", "50051") or 50051)
        metrics = args.metrics_port if args.metrics_port is not None else env("METRICS_PORT")
        health = args.health_port if args.health_port is not None else env("HEALTH_PORT")
        timeout = args.request_timeout or float(env("REQUEST_TIMEOUT_S", "30") or 30)
        inflight = args.max_inflight or int(env("MAX_INFLIGHT", "64") or 64)
        lag_interval = (
            args.lag_interval if args.lag_interval is not None else float(env("LAG_INTERVAL_S", "5") or 5)
        )
        stage_stall = args.stage_stall if args.stage_stall is not None else float(env("STAGE_STALL_S", "10") or 0)
        resend_after = (
            args.resend_after if args.resend_after is not None else float(env("RESEND_AFTER_S", "5") or 0)
        )
        keep = args.snapshots_keep if args.snapshots_keep is not None else int(env("SNAPSHOTS_KEEP", "3") or 3)
    except ValueError as exc:
        raise InvalidInputError(f"bad numeric setting: {exc}") from None
    return ServiceSettings(
        index=index,
        role=args.role or env("ROLE"),
        bus_url=args.bus or env("BUS", "memory://") or "memory://",
        host=args.host or env("HOST", "127.0.0.1") or "127.0.0.1",
        port=port,
        metrics_port=int(metrics) if metrics is not None else None,
        encoder_url=args.encoder or env("ENCODER_URL"),
        vectors_url=args.vectors or env("VECTORS_URL"),
        graph_url=args.graph or env("GRAPH_URL"),
        snapshots_url=args.snapshots or env("SNAPSHOTS_URL"),
        snapshots_keep=keep,
        s3_endpoint_url=args.s3_endpoint_url or env("S3_ENDPOINT_URL"),
        ray_address=args.ray_address or env("RAY_ADDRESS"),
        llm=args.llm or env("LLM_URL") is not None,
        tls_cert_file=_path(args.tls_cert, "TLS_CERT_FILE"),
        tls_key_file=_path(args.tls_key, "TLS_KEY_FILE"),
        tls_client_ca_file=_path(args.tls_client_ca, "TLS_CLIENT_CA_FILE"),
        tokens_file=_path(args.tokens_file, "AUTH_TOKENS_FILE"),
        admin_tokens_file=_path(args.admin_tokens_file, "ADMIN_TOKENS_FILE"),
        health_port=int(health) if health is not None else None,
        request_timeout_s=timeout,
        max_inflight=inflight,
        lag_interval_s=lag_interval,
        stage_stall_s=stage_stall,
        resend_after_s=resend_after,
        colocated=_colocated(args.colocated),
    )


def _colocated(values: list[str] | None) -> tuple[str, ...]:
    """The co-located groups from the flags, else SKBQA_COLOCATED (comma-separated)."""
    text = ",".join(values) if values else env("COLOCATED", "") or ""
    return tuple(group.strip() for group in text.split(",") if group.strip())


def limits_from_args(args: argparse.Namespace) -> ClientLimits:
    """Per-client request limits (off unless a flag or variable sets them)."""

    def pick(value: float | None, name: str) -> str:
        return str(value) if value is not None else env(name, "0") or "0"

    try:
        limits = ClientLimits(
            rate_per_s=float(pick(args.client_rate, "CLIENT_RATE")),
            burst=int(pick(args.client_burst, "CLIENT_BURST")),
            max_inflight=int(pick(args.client_max_inflight, "CLIENT_MAX_INFLIGHT")),
        )
    except ValueError as exc:
        raise InvalidInputError(f"bad client limit: {exc}") from None
    limits.validate()
    return limits


def run_serve(args: argparse.Namespace) -> int:
    from skbqa.serving.run import serve

    settings = settings_from_args(args)
    settings.validate()  # before anything is built: a bad role or group is bad usage (exit 2, one line)
    limits = limits_from_args(args)
    if settings.role not in (None, "gateway", "all") and settings.bus_url.startswith("memory"):
        raise InvalidInputError(
            f"--role {settings.role} needs a shared bus (--bus kafka://host:port); memory:// is one process only"
        )
    return serve(settings, limits)
