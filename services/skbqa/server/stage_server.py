"""The gRPC server of one stage service (`skbqa.v1.Stage/Process`): the same TLS / mutual TLS / bearer-token
settings as the gateway, and at most `max_inflight` calls at once — beyond it RESOURCE_EXHAUSTED at once.

Stage services take their work from the bus; this server is for direct calls and health. Inside a cluster it is
reachable only as the NetworkPolicy allows; mTLS makes the stage refuse callers without a certificate of the
cluster's CA as well.
"""

from __future__ import annotations

from skbqa.distributed.settings import ServiceSettings
from skbqa.distributed.stage_service import StageServicer
from skbqa.distributed.stages import StageCore
from skbqa.server.grpc_server import RunningServer, start_server
from skbqa.server.limits import ClientLimits
from skbqa.server.security import security_options
from skbqa.v1 import stages_pb2_grpc

STAGE_SERVICE = "skbqa.v1.Stage"


def start_stage_server(
    core: StageCore, settings: ServiceSettings, *, limits: ClientLimits | None = None
) -> RunningServer:
    """Started NOT_SERVING (the caller turns it SERVING after warm-up, as for the gateway)."""
    return start_server(
        [(stages_pb2_grpc.add_StageServicer_to_server, StageServicer(core), STAGE_SERVICE)],
        host=settings.host,
        port=settings.port,
        max_inflight=settings.max_inflight,
        guard_inflight=True,  # StageServicer has no cap of its own
        limits=limits,
        service=core.role,
        **security_options(settings),
    )
