"""One table from skbqa's exceptions to gRPC status codes, and the one-line messages clients see.

Messages of expected errors are the error's own one line; anything unexpected becomes INTERNAL with the request
id only — never a stack trace or internal detail (logged server-side instead).
"""

from __future__ import annotations

import logging

from skbqa.common.errors import (
    BackendUnavailableError,
    BundleError,
    IndexStoreError,
    InvalidInputError,
    ModelError,
    SkbqaError,
)

logger = logging.getLogger(__name__)

# grpc.StatusCode values (ints, so this module needs no grpc import: stage workers put them on the bus)
OK = 0
CANCELLED = 1
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
INTERNAL = 13
UNAVAILABLE = 14
UNAUTHENTICATED = 16

_TABLE: list[tuple[type[SkbqaError], int]] = [
    (InvalidInputError, INVALID_ARGUMENT),
    (BundleError, INVALID_ARGUMENT),
    (BackendUnavailableError, UNAVAILABLE),
    (IndexStoreError, FAILED_PRECONDITION),
    (ModelError, UNAVAILABLE),
]

# Errors a retry cannot fix: answered at once instead of retried and dead-lettered.
PERMANENT = {INVALID_ARGUMENT, FAILED_PRECONDITION}


def status_for(error: BaseException, request_id: str = "") -> tuple[int, str]:
    """(status code, client-safe one-line message) for an exception raised while answering."""
    for cls, code in _TABLE:
        if isinstance(error, cls):
            return code, str(error).splitlines()[0] if str(error) else cls.__name__
    # The class and the request id only: an exception's message or traceback (locals, arguments, a parser's
    # excerpt) can quote the question. The traceback is there for whoever turns DEBUG on.
    logger.error("internal error answering request %s: %s", request_id, type(error).__name__)
    logger.debug("traceback of request %s", request_id, exc_info=error)
    where = f" (request {request_id})" if request_id else ""
    return INTERNAL, f"internal error{where}; the server log has the details"


def code_name(code: int) -> str:
    import grpc

    for status in grpc.StatusCode:
        if status.value[0] == code:
            return str(status.name)
    return str(code)
