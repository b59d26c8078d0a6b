"""Turn a public `AskRequest` into the pipeline's first `StageMessage`: validate everything a stage would refuse
later (strategy, k, question, af options), so bad input fails fast at the gateway with INVALID_ARGUMENT."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from skbqa.common.errors import InvalidInputError
from skbqa.distributed import codec
from skbqa.eval.specs import parse_value
from skbqa.pipeline import check_request
from skbqa.strategies.af_config import AfConfig
from skbqa.v1 import api_pb2, stages_pb2

DEFAULT_K = 20
MAX_OPTIONS = 32
MAX_REQUEST_ID = 128


def new_request(
    ask: api_pb2.AskRequest,
    *,
    strategies: Sequence[str],
    default_strategy: str,
    gateway_id: str,
    deadline_s: float | None,
    stream: bool,
) -> stages_pb2.StageMessage:
    strategy = ask.strategy or default_strategy
    k = ask.k or DEFAULT_K
    question = check_request(dict.fromkeys(strategies), strategy, k, ask.question)
    if len(ask.options) > MAX_OPTIONS:
        raise InvalidInputError(f"at most {MAX_OPTIONS} options per request, got {len(ask.options)}")
    options = {key: parse_value(value) for key, value in ask.options.items()}
    if strategy == "af":
        AfConfig().with_options(options)  # raises InvalidInputError with the option's problem
    request_id = ask.request_id or uuid.uuid4().hex
    if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
        raise InvalidInputError(f"request_id must be at most {MAX_REQUEST_ID} printable characters")
    now_ms = int(time.time() * 1000)
    return stages_pb2.StageMessage(
        request_id=request_id,
        deadline_unix_ms=now_ms + int(deadline_s * 1000) if deadline_s else 0,
        accepted_unix_ms=now_ms,
        question=question,
        strategy=strategy,
        k=k,
        options_json=codec.to_json(options),
        stream_partial=stream,
        gateway_id=gateway_id,
    )
