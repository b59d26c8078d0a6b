"""The client SDK of a deployed skbqa service: `SkbqaClient` (blocking) and `AsyncSkbqaClient` (asyncio), with
deadlines that bound a whole call, retries on UNAVAILABLE with backoff, TLS / mutual TLS / bearer tokens, and
typed results (`RemoteAnswer` is an `Answer`, the type the embedded engine returns).

Needs the `client` extra (`pip install skbqa[client]`: grpcio and tenacity); nothing here loads the engine.
"""

from skbqa.client.async_client import AsyncSkbqaClient
from skbqa.client.errors import ServerError
from skbqa.client.options import ClientOptions
from skbqa.client.results import AppliedChanges, AskEvent, Explained, IndexStatus, RemoteAnswer
from skbqa.client.sync_client import SkbqaClient

__all__ = [
    "AppliedChanges",
    "AskEvent",
    "AsyncSkbqaClient",
    "ClientOptions",
    "Explained",
    "IndexStatus",
    "RemoteAnswer",
    "ServerError",
    "SkbqaClient",
]
