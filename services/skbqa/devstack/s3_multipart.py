"""Multipart uploads for the file-backed S3 server (`devstack.s3_files`): what boto3's `upload_file` switches to for
files over 8 MiB, which a snapshot push of a full-size index sends (`skbqa stack up --snapshots`, changes/shipping.py).

Create (``POST ?uploads``), upload parts (``PUT ?partNumber=N&uploadId=ID``), complete (``POST ?uploadId=ID`` with
the parts listed) or abort (``DELETE ?uploadId=ID``). Parts wait in memory until completion, which writes the
object as one ordinary write (so readers see it whole, as for a single PUT); an upload never completed is lost with
the server, as S3 would expire it. Tansu never uses this.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from xml.sax.saxutils import escape

_PART = re.compile(r"<PartNumber>\s*(\d+)\s*</PartNumber>")


class Uploads:
    """The multipart uploads in progress: upload id → (bucket, key, part number → bytes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uploads: dict[str, tuple[str, str, dict[int, bytes]]] = {}

    def create(self, bucket: str, key: str) -> str:
        upload = uuid.uuid4().hex
        with self._lock:
            self._uploads[upload] = (bucket, key, {})
        return upload

    def put_part(self, upload: str, number: int, body: bytes) -> str | None:
        """Keep one part; its ETag, or None when the upload is unknown (a 404)."""
        with self._lock:
            found = self._uploads.get(upload)
            if found is None:
                return None
            found[2][number] = body
        return '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'

    def complete(self, upload: str, bucket: str, key: str, listing: bytes) -> bytes | None:
        """The object's bytes: the listed parts in order (None: an unknown upload or a part never uploaded)."""
        with self._lock:
            found = self._uploads.get(upload)
            if found is None or found[:2] != (bucket, key):
                return None
            numbers = [int(n) for n in _PART.findall(listing.decode(errors="replace"))]
            if not numbers or any(n not in found[2] for n in numbers):
                return None
            del self._uploads[upload]
        return b"".join(found[2][n] for n in numbers)

    def abort(self, upload: str) -> None:
        with self._lock:
            self._uploads.pop(upload, None)


def created_xml(bucket: str, key: str, upload: str) -> bytes:
    return (
        f"<InitiateMultipartUploadResult><Bucket>{escape(bucket)}</Bucket><Key>{escape(key)}</Key>"
        f"<UploadId>{upload}</UploadId></InitiateMultipartUploadResult>"
    ).encode()


def completed_xml(bucket: str, key: str, etag: str) -> bytes:
    return (
        f"<CompleteMultipartUploadResult><Bucket>{escape(bucket)}</Bucket><Key>{escape(key)}</Key>"
        f"<ETag>{escape(etag)}</ETag></CompleteMultipartUploadResult>"
    ).encode()
