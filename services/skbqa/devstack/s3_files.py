"""A small S3 server over a local directory: the durable broker's default object store (``s3_server="files"``).

Why it exists: Tansu 0.6's s3 engine makes several object round-trips per produce, fetch, offset commit and group
heartbeat (about seven per pipeline hop, measured in ``bench/kafka_storage.py``), and moto spends milliseconds of
Python per request, which made ``--durable`` too slow to carry load (issue 19). This server does only what Tansu's
object store client (arrow-rs ``object_store``) asks for, and does it cheaply:

- ``PUT``/``GET``/``HEAD``/``DELETE`` of objects, ``GET`` with ``Range``, ``PUT`` with ``x-amz-copy-source``;
- conditional writes: ``If-None-Match: *`` (create only) and ``If-Match: ETAG`` (replace only that version)
  answer 412 otherwise, checked and applied under one lock, so two producers of one partition cannot both win
  (s3rver ignores these headers and loses records);
- ``ListObjectsV2`` (and v1) with ``prefix``, ``delimiter``, ``start-after`` and continuation tokens;
- ``PUT``/``HEAD`` of a bucket; multipart uploads (``s3_multipart``: boto3's for files over 8 MiB, which a snapshot
  push of ``skbqa stack up --snapshots`` sends); DeleteObjects (``s3_deletes``: the updater's snapshot retention).
  Signatures are not checked: it listens on loopback only.

Every object is one file, named by the SHA-256 of its key, holding a JSON header line (key, ETag, time) and the
bytes; it is written to a temporary file and renamed over the old one, so a reader sees a whole version and a
killed server leaves no torn object. The objects survive a kill of Tansu, of this server and of the launcher;
with ``--fsync`` they also survive a power cut (each write then waits for the disk).

    python -m skbqa.devstack.s3_files --port 4568 --dir DATA/objects [--bucket tansu] [--fsync] [--log-requests]
"""

from __future__ import annotations

import argparse
import bisect
import email.utils
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

from skbqa.devstack.s3_deletes import deleted_xml, parse_delete
from skbqa.devstack.s3_multipart import Uploads, completed_xml, created_xml

_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"
_MAX_KEYS = 1000


class Meta:
    __slots__ = ("etag", "listed", "mtime", "path", "size")

    def __init__(self, path: Path, etag: str, mtime: float, size: int, key: str = "") -> None:
        self.path, self.etag, self.mtime, self.size = path, etag, mtime, size
        # the object's <Contents> entry, rendered once: Tansu 0.6 lists a partition's whole history on every fetch
        self.listed = (
            f"<Contents><Key>{escape(key)}</Key><LastModified>{_iso(mtime)}</LastModified>"
            f"<ETag>{escape(etag)}</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>"
        )


class Bucket:
    """The objects of one bucket: files in `directory`, with an in-memory index (key → Meta, and sorted keys)."""

    def __init__(self, directory: Path, *, fsync: bool) -> None:
        self.directory = directory
        self.fsync = fsync
        self.lock = threading.Lock()  # serialises writes: a conditional PUT checks and replaces atomically
        self.index: dict[str, Meta] = {}
        self.keys: list[str] = []
        directory.mkdir(parents=True, exist_ok=True)
        for path in directory.glob("*.obj"):
            with open(path, "rb") as handle:
                header = json.loads(handle.readline())
                size = path.stat().st_size - handle.tell()
            self.index[header["key"]] = Meta(path, header["etag"], header["mtime"], size, header["key"])
        self.keys = sorted(self.index)
        for stale in directory.glob("*.tmp"):  # a write cut short by a kill; its object keeps the old version
            stale.unlink(missing_ok=True)

    def read(self, key: str) -> tuple[Meta, bytes] | None:
        meta = self.index.get(key)
        if meta is None:
            return None
        try:
            with open(meta.path, "rb") as handle:
                header = json.loads(handle.readline())
                body = handle.read()
        except FileNotFoundError:  # deleted since the lookup
            return None
        # the file may have been replaced since the lookup: its own header is the truth for these bytes
        return Meta(meta.path, header["etag"], header["mtime"], len(body)), body

    def write(self, key: str, body: bytes, *, if_match: str | None, if_none_match: str | None) -> Meta | None:
        """Store `body` under `key` unless a precondition fails (then None, for a 412)."""
        etag = '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'
        path = self.directory / (hashlib.sha256(key.encode()).hexdigest() + ".obj")
        with self.lock:
            current = self.index.get(key)
            if if_none_match == "*" and current is not None:
                return None
            if if_match is not None and (current is None or (if_match != "*" and if_match != current.etag)):
                return None
            mtime = time.time()
            temporary = path.with_suffix(f".{threading.get_ident()}.tmp")
            with open(temporary, "wb") as handle:
                handle.write(json.dumps({"key": key, "etag": etag, "mtime": mtime}).encode() + b"\n")
                handle.write(body)
                if self.fsync:
                    handle.flush()
                    os.fsync(handle.fileno())
            os.replace(temporary, path)
            if self.fsync:  # the rename itself must reach the disk too
                descriptor = os.open(self.directory, os.O_RDONLY)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            meta = Meta(path, etag, mtime, len(body), key)
            if current is None:
                bisect.insort(self.keys, key)
            self.index[key] = meta
            return meta

    def delete(self, key: str) -> None:
        with self.lock:
            meta = self.index.pop(key, None)
            if meta is None:
                return
            del self.keys[bisect.bisect_left(self.keys, key)]
            meta.path.unlink(missing_ok=True)

    def listing(self, prefix: str, delimiter: str, after: str, limit: int) -> tuple[list[str], list[str], str]:
        """(each key's <Contents>, common prefixes, the last key or prefix returned when truncated, else "")."""
        with self.lock:
            if delimiter and after.endswith(delimiter) and after not in self.index:
                start = bisect.bisect_left(self.keys, after + "\U0010ffff")  # past a common prefix returned before
            else:
                start = bisect.bisect_right(self.keys, after) if after else bisect.bisect_left(self.keys, prefix)
            keys: list[str] = []
            prefixes: list[str] = []
            position = start
            while position < len(self.keys) and len(keys) + len(prefixes) < limit:
                key = self.keys[position]
                if not key.startswith(prefix):
                    break
                cut = key.find(delimiter, len(prefix)) if delimiter else -1
                if cut >= 0:
                    common = key[: cut + len(delimiter)]
                    prefixes.append(common)
                    # skip every key under this common prefix
                    position = bisect.bisect_left(self.keys, common + "\U0010ffff")
                    continue
                keys.append(key)
                position += 1
            more = position < len(self.keys) and self.keys[position].startswith(prefix)
            last = max(keys[-1:] + prefixes[-1:], default="")  # where the next page starts
            return [self.index[key].listed for key in keys], prefixes, last if more else ""


class ObjectServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], root: Path, *, fsync: bool, log_requests: bool) -> None:
        self.root = root
        self.fsync = fsync
        self.log_requests = log_requests
        self.buckets: dict[str, Bucket] = {}
        self.buckets_lock = threading.Lock()
        self.uploads = Uploads()  # multipart uploads in progress (devstack/s3_multipart.py)
        root.mkdir(parents=True, exist_ok=True)
        for directory in root.iterdir():
            if directory.is_dir():
                self.buckets[directory.name] = Bucket(directory, fsync=fsync)
        super().__init__(address, _Handler)

    def bucket(self, name: str, *, create: bool = False) -> Bucket | None:
        with self.buckets_lock:
            if name not in self.buckets and create:
                self.buckets[name] = Bucket(self.root / name, fsync=self.fsync)
            return self.buckets.get(name)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Tansu's client reuses its connections
    # TCP_NODELAY: else a reply's second segment waits for the client's delayed ACK (~40 ms), and Tansu's fetch,
    # which stops reading a listing once its max wait has passed, misses records it was about to see
    disable_nagle_algorithm = True
    wbufsize = 1 << 16  # headers and body leave in one write (the server flushes after each request)
    server: ObjectServer

    def handle_expect_100(self) -> bool:
        # boto3 sends "Expect: 100-continue" with every PUT body; the write buffer above would hold the interim
        # reply back, and the client then waits its 1 s timeout before sending the body (a snapshot push: 1 s/file)
        self.send_response_only(100)
        self.end_headers()
        self.wfile.flush()
        return True

    def log_message(self, format: str, *args: object) -> None:
        if self.server.log_requests:
            sys.stdout.write(
                f"{self.command} {urllib.parse.unquote(self.path)} {args[1] if len(args) > 1 else ''}\n"
            )

    # -- request routing ----------------------------------------------------------------------------------------

    def _target(self) -> tuple[str, str, dict[str, str]]:
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path).lstrip("/")
        bucket, _, key = path.partition("/")
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        return bucket, key, query

    def do_PUT(self) -> None:
        bucket_name, key, query = self._target()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "uploadId" in query and query.get("partNumber", "").isdigit():
            etag = self.server.uploads.put_part(query["uploadId"], int(query["partNumber"]), body)
            return self._reply(200, headers={"ETag": etag}) if etag else self._error(404, "NoSuchUpload")
        if not key:
            self.server.bucket(bucket_name, create=True)
            return self._reply(200)
        bucket = self.server.bucket(bucket_name)
        if bucket is None:
            return self._error(404, "NoSuchBucket")
        source = self.headers.get("x-amz-copy-source")
        if source is not None:
            return self._copy(bucket, key, urllib.parse.unquote(source).lstrip("/"))
        meta = bucket.write(
            key, body, if_match=self.headers.get("If-Match"), if_none_match=self.headers.get("If-None-Match")
        )
        if meta is None:
            return self._error(412, "PreconditionFailed")
        self._reply(200, headers={"ETag": meta.etag})

    def _copy(self, bucket: Bucket, key: str, source: str) -> None:
        source_bucket_name, _, source_key = source.partition("/")
        source_bucket = self.server.bucket(source_bucket_name)
        found = source_bucket.read(source_key) if source_bucket is not None else None
        if found is None:
            return self._error(404, "NoSuchKey")
        meta = bucket.write(key, found[1], if_match=None, if_none_match=self.headers.get("If-None-Match"))
        if meta is None:
            return self._error(412, "PreconditionFailed")
        xml = f"<CopyObjectResult><LastModified>{_iso(meta.mtime)}</LastModified><ETag>{escape(meta.etag)}</ETag>"
        self._reply(200, (xml + "</CopyObjectResult>").encode(), {"Content-Type": "application/xml"})

    def do_GET(self) -> None:
        self._get(send_body=True)

    def do_HEAD(self) -> None:
        self._get(send_body=False)

    def _get(self, *, send_body: bool) -> None:
        bucket_name, key, query = self._target()
        bucket = self.server.bucket(bucket_name)
        if bucket is None:
            return self._error(404, "NoSuchBucket", send_body=send_body)
        if not key:
            return self._list(bucket, bucket_name, query) if send_body else self._reply(200)
        found = bucket.read(key)
        if found is None:
            return self._error(404, "NoSuchKey", send_body=send_body)
        meta, body = found
        headers = {"ETag": meta.etag, "Last-Modified": email.utils.formatdate(meta.mtime, usegmt=True)}
        if_match, if_none_match = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        if if_match is not None and if_match not in ("*", meta.etag):
            return self._error(412, "PreconditionFailed", send_body=send_body)
        if if_none_match is not None and if_none_match in ("*", meta.etag):
            return self._reply(304, headers=headers, send_body=False)
        status, selected = 200, body
        wanted = _byte_range(self.headers.get("Range"), len(body))
        if wanted is not None:
            start, end = wanted
            status, selected = 206, body[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(body)}"
        headers["Content-Type"] = "application/octet-stream"
        self._reply(status, selected, headers, send_body=send_body)

    def _list(self, bucket: Bucket, name: str, query: dict[str, str]) -> None:
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        after = query.get("continuation-token") or query.get("start-after") or query.get("marker") or ""
        limit = max(1, min(int(query.get("max-keys") or _MAX_KEYS), _MAX_KEYS))
        keys, prefixes, last = bucket.listing(prefix, delimiter, after, limit)
        parts = [f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{_XMLNS}">']
        parts.append(f"<Name>{escape(name)}</Name><Prefix>{escape(prefix)}</Prefix><MaxKeys>{limit}</MaxKeys>")
        if delimiter:
            parts.append(f"<Delimiter>{escape(delimiter)}</Delimiter>")
        parts.append(f"<KeyCount>{len(keys) + len(prefixes)}</KeyCount>")
        parts.append(f"<IsTruncated>{'true' if last else 'false'}</IsTruncated>")
        if last:
            token = "NextContinuationToken" if query.get("list-type") == "2" else "NextMarker"
            parts.append(f"<{token}>{escape(last)}</{token}>")
        parts.extend(keys)
        for common in prefixes:
            parts.append(f"<CommonPrefixes><Prefix>{escape(common)}</Prefix></CommonPrefixes>")
        parts.append("</ListBucketResult>")
        self._reply(200, "".join(parts).encode(), {"Content-Type": "application/xml"})

    def do_DELETE(self) -> None:
        bucket_name, key, query = self._target()
        bucket = self.server.bucket(bucket_name)
        if "uploadId" in query:
            self.server.uploads.abort(query["uploadId"])
        elif bucket is not None and key:
            bucket.delete(key)
        self._reply(204)

    def do_POST(self) -> None:  # multipart uploads (boto3's for files over 8 MiB) and batch deletes
        bucket_name, key, query = self._target()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        bucket = self.server.bucket(bucket_name)
        if bucket is None:
            return self._error(404, "NoSuchBucket")
        if not key and "delete" in query:
            return self._delete_objects(bucket, body)
        if not key or not ("uploads" in query or "uploadId" in query):
            return self._error(501, "NotImplemented")
        if "uploads" in query:
            upload = self.server.uploads.create(bucket_name, key)
            return self._reply(200, created_xml(bucket_name, key, upload), {"Content-Type": "application/xml"})
        whole = self.server.uploads.complete(query["uploadId"], bucket_name, key, body)
        if whole is None:
            return self._error(400, "InvalidPart")
        meta = bucket.write(key, whole, if_match=None, if_none_match=None)
        assert meta is not None  # no precondition was given
        self._reply(200, completed_xml(bucket_name, key, meta.etag), {"Content-Type": "application/xml"})

    def _delete_objects(self, bucket: Bucket, body: bytes) -> None:
        parsed = parse_delete(body)
        if parsed is None:
            return self._error(400, "MalformedXML")
        for key in parsed[0]:
            bucket.delete(key)
        self._reply(200, deleted_xml(*parsed), {"Content-Type": "application/xml"})

    # -- replies ------------------------------------------------------------------------------------------------

    def _error(self, status: int, code: str, *, send_body: bool = True) -> None:
        xml = f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{code}</Message></Error>'
        self._reply(status, xml.encode(), {"Content-Type": "application/xml"}, send_body=send_body)

    def _reply(
        self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, *, send_body: bool = True
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body and status != 304:
            self.wfile.write(body)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a ``Range: bytes=...`` header (one range), or None for the whole object."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[len("bytes=") :].partition("-")
    if not first:  # the last N bytes
        return max(0, size - int(last)), size - 1
    return int(first), min(int(last), size - 1) if last else size - 1


def server_argv(python: str, port: int, directory: Path, bucket: str) -> list[str]:
    """The command that runs this server on 127.0.0.1:`port` over `directory`, with `bucket` created."""
    options = ["--port", str(port), "--dir", str(directory), "--bucket", bucket]
    return [python, "-m", "skbqa.devstack.s3_files", *options]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skbqa.devstack.s3_files", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", type=Path, required=True, help="where the objects live (one folder per bucket)")
    parser.add_argument("--bucket", action="append", default=[], help="create this bucket at start-up")
    parser.add_argument("--fsync", action="store_true", help="wait for the disk on every write (power-cut safe)")
    parser.add_argument("--log-requests", action="store_true", help="one line per request on stdout")
    args = parser.parse_args(argv)
    server = ObjectServer((args.host, args.port), args.dir, fsync=args.fsync, log_requests=args.log_requests)
    for name in args.bucket:
        server.bucket(name, create=True)
    print(f"serving {args.dir} on http://{args.host}:{args.port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
