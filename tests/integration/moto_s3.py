"""An S3 server for tests: moto's, over HTTP on 127.0.0.1, with the dummy credentials boto3 needs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from skbqa.devstack.ports import free_port
from skbqa.ingest.object_store import s3_client

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


@contextmanager
def moto_s3(*buckets: str) -> Iterator[str]:
    """The endpoint URL of a fresh S3 server holding `buckets` (empty); the credentials are set meanwhile."""
    from moto.server import ThreadedMotoServer

    saved = {name: os.environ.get(name) for name in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        for bucket in buckets:
            s3_client(endpoint).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
