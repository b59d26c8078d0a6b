"""The gRPC shell around a stage core: `skbqa.v1.Stage/Process` runs one stage on a message, for direct calls
(debugging, a client that wants to run a stage remotely) without the bus."""

from __future__ import annotations

import grpc

from skbqa.distributed.stages import StageCore, StageMessage, run_stage
from skbqa.distributed.status import status_for
from skbqa.v1 import stages_pb2, stages_pb2_grpc

_CODES = {status.value[0]: status for status in grpc.StatusCode}


class StageServicer(stages_pb2_grpc.StageServicer):
    def __init__(self, core: StageCore) -> None:
        self._core = core

    def Process(self, request: StageMessage, context: grpc.ServicerContext) -> stages_pb2.StageResult:
        try:
            output = run_stage(self._core, request)
        except Exception as exc:
            code, text = status_for(exc, request.request_id)
            context.abort(_CODES[code], text)
        result = stages_pb2.StageResult(answers=output.answers, has_forward=output.forward is not None)
        if output.forward is not None:
            result.forward.CopyFrom(output.forward)
        return result
