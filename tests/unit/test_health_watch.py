"""Health status changes while Watch clients come and go never hang the server (serving/health.py)."""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from skbqa.serving.health import HealthServicer

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def _serve(servicer: HealthServicer) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


@pytest.mark.timeout(120)
def test_status_changes_while_watches_close_never_hang() -> None:
    servicer = HealthServicer()
    server, port = _serve(servicer)
    stop = threading.Event()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)

            def flip() -> None:
                turn = 0
                while not stop.is_set():
                    servicer.set("", SERVING if turn % 2 else NOT_SERVING)
                    turn += 1

            flipper = threading.Thread(target=flip, daemon=True)
            flipper.start()
            for _ in range(60):
                watches = [stub.Watch(health_pb2.HealthCheckRequest(), timeout=10) for _ in range(8)]
                for watch in watches:
                    next(watch)  # registered
                for watch in watches:
                    watch.cancel()  # each close runs a callback on the server's event thread
            stop.set()
            flipper.join(30)
            assert not flipper.is_alive(), "set() hung behind a closing watch"
            servicer.set("", SERVING)
            watch = stub.Watch(health_pb2.HealthCheckRequest(), timeout=10)
            assert next(watch).status == SERVING
            servicer.set("", NOT_SERVING)
            assert next(watch).status == NOT_SERVING  # a live watch still gets every change
            watch.cancel()
    finally:
        server.stop(0)
