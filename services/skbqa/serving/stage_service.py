"""The gRPC shell around a stage core: `skbqa.v1.Stage/Process` runs one stage on a message, for direct calls
(debugging, a client that wants to run a stage remotely) without the bus, and the server that carries it (the same
TLS / mTLS / token settings as the gateway, at most `max_inflight` calls at once, health for the service).

Same rules as the bus shell (distributed/worker.py): a message whose `deadline_unix_ms` has passed is answered
DEADLINE_EXCEEDED without computing; errors map to status codes through distributed/status.py (bad input →
INVALID_ARGUMENT with one line, anything unexpected → INTERNAL with the request id only). Each call counts in
`skbqa_inflight{service=<role>}` and `skbqa_stage_seconds{stage,strategy,status}`.
"""

from __future__ import annotations

import time

import grpc

from skbqa.observability.metrics import get_metrics
from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.grpc_server import RunningServer, start_server
from skbqa.serving.security import security_options
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stage_versions import VersionedCores, VersionUnavailableError
from skbqa.serving.stages.chain import members
from skbqa.serving.stages.core import StageCore, StageMessage, StageOutput
from skbqa.serving.stages.registry import run_stage
from skbqa.serving.status import DEADLINE_EXCEEDED, OK, PERMANENT, status_for
from skbqa.v1 import stages_pb2, stages_pb2_grpc

_CODES = {status.value[0]: status for status in grpc.StatusCode}


class StageServicer(stages_pb2_grpc.StageServicer):
    """`core` may be a co-located `StageChain`: a call then runs its stages in turn (each with its deadline check
    and its own metrics) and returns the last forward with every stage's answers."""

    def __init__(self, core: StageCore) -> None:
        self._cores = members(core)
        self._metrics = get_metrics()
        # the knowledge-base versions this replica follows (set once they are open): a direct call runs on the
        # version its message is pinned to, or pins it to the one served now, as a call through the bus does
        self.versions: VersionedCores | None = None

    def Process(self, request: StageMessage, context: grpc.ServicerContext) -> stages_pb2.StageResult:
        result = stages_pb2.StageResult()
        message: StageMessage | None = request
        cores = self._cores
        if self.versions is not None:
            try:
                cores = members(self.versions.core_for(request))
            except VersionUnavailableError as exc:
                context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
                raise AssertionError("unreachable: abort raises") from None
        for core in cores:
            if message is None:
                break
            with self._metrics.inflight(core.role):
                started = time.perf_counter()
                code, text, output = self._run(core, message)
                self._metrics.observe_stage(
                    core.role, message.strategy, time.perf_counter() - started, _status(code)
                )
            if output is None:
                context.abort(_CODES[code], text)
                raise AssertionError("unreachable: abort raises")  # grpc's stubs do not say abort never returns
            result.answers.extend(output.answers)
            message = output.forward
        result.has_forward = message is not None
        if message is not None:
            result.forward.CopyFrom(message)
        return result

    def _run(self, core: StageCore, request: StageMessage) -> tuple[int, str, StageOutput | None]:
        if request.deadline_unix_ms and time.time() * 1000 > request.deadline_unix_ms:
            return DEADLINE_EXCEEDED, f"deadline passed before the {core.role} stage", None
        try:
            return OK, "", run_stage(core, request)
        except Exception as exc:
            code, text = status_for(exc, request.request_id)
            self._metrics.count_error(core.role, type(exc).__name__)
            return code, text, None


def _status(code: int) -> str:
    """The `status` label, in the worker's words (ok / expired / invalid / error)."""
    if code == OK:
        return "ok"
    if code == DEADLINE_EXCEEDED:
        return "expired"
    return "invalid" if code in PERMANENT else "error"


STAGE_SERVICE = "skbqa.v1.Stage"


def start_stage_server(
    core: StageCore,
    settings: ServiceSettings,
    *,
    limits: ClientLimits | None = None,
    servicer: StageServicer | None = None,
) -> RunningServer:
    """Started NOT_SERVING (the caller turns it SERVING after warm-up, as for the gateway). `servicer`: the one to
    serve, when the caller keeps it (to set its `versions` once the replica follows the knowledge base's)."""
    servicer = servicer or StageServicer(core)
    return start_server(
        [(stages_pb2_grpc.add_StageServicer_to_server, servicer, STAGE_SERVICE)],
        host=settings.host,
        port=settings.port,
        max_inflight=settings.max_inflight,
        guard_inflight=True,  # StageServicer has no cap of its own
        limits=limits,
        service=members(core)[0].role,  # a metrics label: a co-located service's refusals go to its entry stage
        **security_options(settings),
    )
