"""Build a gRPC server with the standard health service and reflection, on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from skbqa.serving.decoding import RequestDecodingInterceptor
from skbqa.serving.gateway.call_guard import CallGuardInterceptor, ClientIdentifier
from skbqa.serving.gateway.limits import ClientLimiter, ClientLimits
from skbqa.serving.health import HealthServicer
from skbqa.serving.security import TlsSettings, TokenAuthInterceptor

# Big enough that an oversized question reaches the servicer and gets INVALID_ARGUMENT with the limit in words;
# beyond it gRPC itself answers RESOURCE_EXHAUSTED before reading the message.
MAX_MESSAGE_BYTES = 2 * 1024 * 1024
# Threads beyond the in-flight cap: health checks, IndexStatus and the quick refusals still get a thread when every
# API slot is taken (otherwise they would queue behind the slow calls).
SPARE_THREADS = 8
# Reflection streams open at once (each holds a thread while open; beyond it RESOURCE_EXHAUSTED), with threads of
# their own so that idle ones never take the spare threads.
REFLECTION_STREAMS = 2
# gRPC's server-wide `maximum_concurrent_rpcs` is deliberately not set: it counts health checks with every other
# call and refuses them alike ("Concurrent RPC limit exceeded!"), so a flood would fail the probes. A per-connection
# stream cap (`grpc.max_concurrent_streams`) is not set either: gRPC core then answers REFUSED_STREAM to streams on
# other connections too, health included, while one connection floods. The API's limits are enforced by the guards
# (per client, then server-wide), which refuse at once on a pool thread, so waiting calls only ever queue for the
# few microseconds a refusal takes; bounding connections per client is the ingress's job (SECURITY.md).
# gRPC core keeps calls that arrived before the server took them in a queue per method and sheds them at random
# (CANCELLED) past a soft limit (1,000 by default, up to a hard limit of 3,000), the flooder's and other
# clients' alike; the server takes a refused call in microseconds, so a deeper queue costs little time and lets
# a burst of that size drain instead of cancelling other clients' calls. Health is a method of its own, so its
# queue is never the flood's.
MAX_PENDING_CALLS = 8192


# A health service name that is SERVING for as long as the process answers, whatever its dependencies: what a
# liveness probe asks, so that a broker outage (every service NOT_SERVING: not ready) does not restart every pod.
LIVENESS = "liveness"


@dataclass
class RunningServer:
    server: grpc.Server
    port: int
    health: health.HealthServicer
    services: tuple[str, ...]
    health_server: grpc.Server | None = None  # plaintext health-only listener beside a TLS server
    health_port: int = 0

    def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self.services):
            self.health.set(name, status)

    def stop(self, grace_s: float = 2.0) -> None:
        self.set_serving(False)
        self.health.set(LIVENESS, health_pb2.HealthCheckResponse.NOT_SERVING)
        self.server.stop(grace_s).wait(grace_s + 1)
        if self.health_server is not None:
            self.health_server.stop(0)


def start_server(
    registrations: Sequence[tuple[Callable[[Any, grpc.Server], None], Any, str]],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_inflight: int = 64,
    guard_inflight: bool = False,
    tls: TlsSettings | None = None,
    tokens: list[bytes] | None = None,
    health_port: int | None = None,
    limits: ClientLimits | None = None,
    service: str = "gateway",
) -> RunningServer:
    """`registrations`: (add_XServicer_to_server, servicer, full service name). Reports NOT_SERVING until the
    caller says otherwise (after warm-up).

    `max_inflight`: the API calls that may run at once. The servicer caps them itself (the gateway's), or, with
    `guard_inflight`, the call guard does (for servicers without a cap of their own, like the stage services);
    either way a call beyond it is RESOURCE_EXHAUSTED at once. The pool has a thread for each of them, for each
    reflection stream and SPARE_THREADS more, so health checks and refusals always find a thread; gRPC's own
    limit is not used (it would refuse health checks too). `limits`: per-client rate and concurrency
    (gateway/limits.py), checked before the server-wide cap. Malformed requests are INVALID_ARGUMENT
    (decoding.py)."""
    interceptors: list[grpc.ServerInterceptor] = [TokenAuthInterceptor(tokens)] if tokens else []
    limiter = ClientLimiter(limits) if limits is not None and limits.enabled else None
    # after the token check: unauthenticated calls neither spend a client's budget nor grow its table
    interceptors.append(
        CallGuardInterceptor(
            service=service,
            limiter=limiter,
            max_inflight=max_inflight if guard_inflight else None,
            identify=ClientIdentifier(tokens_on=bool(tokens)),
            reflection_streams=REFLECTION_STREAMS,
        )
    )
    interceptors.append(RequestDecodingInterceptor(service=service))  # innermost: the others copy its decoder
    threads = max_inflight + REFLECTION_STREAMS + SPARE_THREADS
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skbqa-grpc"),
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", 16 * 1024 * 1024),
            ("grpc.so_reuseport", 0),
            ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
            ("grpc.server.max_pending_requests_hard_limit", 2 * MAX_PENDING_CALLS),
        ],
    )
    names = []
    for add, servicer, name in registrations:
        add(servicer, server)
        names.append(name)
    health_servicer = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"{host}:{port}"
    bound = server.add_secure_port(address, tls.credentials()) if tls else server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    running = RunningServer(server, bound, health_servicer, tuple(names))
    if health_port is not None:
        # Kubernetes' native gRPC probes cannot speak TLS: the same health status, plaintext, on its own port
        # (health only: no API method is reachable there).
        probe = grpc.server(
            futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="skbqa-health"),
            interceptors=[RequestDecodingInterceptor(service=service)],
        )
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, probe)
        running.health_port = probe.add_insecure_port(f"{host}:{health_port}")
        probe.start()
        running.health_server = probe
    running.set_serving(False)
    health_servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
    return running
