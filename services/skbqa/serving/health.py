"""The standard gRPC health service, with status pushes to Watch streams sent outside the status lock.

grpcio-health-checking's servicer sends a Watch update while holding its lock, and that send waits for the
server's event thread; the same thread runs a closing watch's callback, which needs the lock. A status change
(e.g. NOT_SERVING at shutdown) while a client cancels its watch then hangs both for good. Here sends are
serialised by a lock of their own, which the event thread never takes; the status lock only guards the table.
"""

from __future__ import annotations

import threading
from typing import Any

from grpc_health.v1 import health, health_pb2


class HealthServicer(health.HealthServicer):
    def __init__(self) -> None:
        super().__init__(experimental_non_blocking=True)
        self._send_lock = threading.RLock()  # always taken before self._lock, never by the event thread

    def Watch(self, request: Any, context: Any, send_response_callback: Any = None) -> Any:
        if send_response_callback is None:  # a server without non-blocking streams: the base's own watcher
            return super().Watch(request, context)
        service = request.service
        with self._send_lock:
            with self._lock:
                status = self._server_status.get(service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
                self._send_response_callbacks.setdefault(service, set()).add(send_response_callback)
                context.add_callback(self._on_close_callback(send_response_callback, service))
            send_response_callback(health_pb2.HealthCheckResponse(status=status))
        return None

    def set(self, service: str, status: Any) -> None:
        with self._send_lock:
            with self._lock:
                if self._gracefully_shutting_down:
                    return
                self._server_status[service] = status
                watchers = list(self._send_response_callbacks.get(service, ()))
            for send_response_callback in watchers:
                send_response_callback(health_pb2.HealthCheckResponse(status=status))
