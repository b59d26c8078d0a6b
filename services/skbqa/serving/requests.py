"""Turn a public `AskRequest` into the pipeline's first `StageMessage`: validate everything a stage would refuse
later (strategy, k, question, af options), so bad input fails fast at the gateway with INVALID_ARGUMENT."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import check_request
from skbqa.eval.specs import parse_option_value
from skbqa.serving import codec
from skbqa.stages.config import AfConfig
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
    """The validated first message of `ask`. Its `request_id` is this call's own: the client's id (when given)
    with a fresh suffix, so two calls that use one client id — another client's, or a retry while the first is
    still running — are never correlated with each other's answers on the bus or by a stage's duplicate check."""
    strategy = ask.strategy or default_strategy
    k = ask.k or DEFAULT_K
    if len(ask.options) > MAX_OPTIONS:
        raise InvalidInputError(f"at most {MAX_OPTIONS} options per request, got {len(ask.options)}")
    options = {key: parse_option_value(key, value) for key, value in sorted(ask.options.items())}
    question = check_request(dict.fromkeys(strategies), strategy, k, ask.question, options)
    if strategy == "af":
        AfConfig().with_options(options)  # raises InvalidInputError with the option's problem
    if ask.request_id and (len(ask.request_id) > MAX_REQUEST_ID or not ask.request_id.isprintable()):
        raise InvalidInputError(f"request_id must be at most {MAX_REQUEST_ID} printable characters")
    request_id = f"{ask.request_id}#{uuid.uuid4().hex[:12]}" if ask.request_id else uuid.uuid4().hex
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


def fingerprint(message: stages_pb2.StageMessage) -> bytes:
    """What makes two requests the same request (for a retry under one request_id): the cleaned question, the
    strategy, k and the options (sorted by name in `options_json`)."""
    digest = hashlib.sha256()
    for part in (message.question, message.strategy, str(message.k), message.options_json):
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.digest()
