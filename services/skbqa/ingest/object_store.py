"""An index in object storage (S3 or an S3-compatible store): published once by the ingest Job, fetched by every
pod onto its own disk. This is how a cluster without ReadWriteMany volumes serves one index from many nodes.

Layout under `s3://BUCKET/PREFIX/`:

    versions/<version>/manifest.json, versions/<version>/<every file the manifest lists>
    LATEST            {"version": "<version>", "created_unix": …}   written last: the switch readers follow

`<version>` is the first 16 hex digits of the manifest's SHA-256, so publishing the same index twice writes the
same objects, and a pod that already holds that version fetches nothing. A pull downloads into a work directory
beside the target, checks every file's size and CRC-32 against the manifest, and renames it into place as ingest
does; a killed pull leaves the previous index serving. Credentials come from the usual AWS chain (environment,
a mounted profile, a pod identity); `endpoint_url` points at MinIO, Ceph or any S3-compatible store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from skbqa.common.errors import BackendUnavailableError, IndexStoreError, InvalidInputError, clip
from skbqa.ingest.builder import swap_into_place
from skbqa.stores.index import FILES, MANIFEST, read_manifest, recover_index, verify_files, work_prefix

logger = logging.getLogger(__name__)

LATEST = "LATEST"


class NotPublishedError(IndexStoreError):
    """No index has been published at that location (yet)."""


class VersionGoneError(IndexStoreError):
    """The version asked for is no longer in the store (the updater's retention removed it, possibly while it was
    being fetched); the newest version, which LATEST names, is the one to fetch."""


@dataclass(frozen=True)
class Location:
    bucket: str
    prefix: str  # no leading or trailing slash; "" = the bucket's root

    @classmethod
    def parse(cls, url: str) -> Location:
        if not url.startswith("s3://"):
            raise InvalidInputError(f"object store URL must be s3://BUCKET[/PREFIX], got '{clip(url)}'")
        bucket, _, prefix = url[len("s3://") :].partition("/")
        if not bucket:
            raise InvalidInputError(f"object store URL has no bucket: '{clip(url)}'")
        return cls(bucket, prefix.strip("/"))

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)


@dataclass
class Transfer:
    version: str
    files: int
    bytes: int
    seconds: float
    skipped: bool = False  # pull: the target already held this version


def s3_client(endpoint_url: str | None = None) -> Any:
    try:
        import boto3
    except ImportError:
        raise InvalidInputError("object storage needs boto3: pip install 'skbqa[s3]'") from None
    return boto3.client("s3", endpoint_url=endpoint_url or None)


def version_of(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest()[:16]


def push_index(directory: Path, url: str, *, client: Any = None, endpoint_url: str | None = None) -> Transfer:
    """Upload the index at `directory` (every file its manifest lists, then the manifest, then LATEST)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    files = manifest.get(FILES)
    if not isinstance(files, dict) or not files:
        raise IndexStoreError(f"{directory}: the manifest lists no files (built by an older skbqa); re-run ingest")
    verify_files(directory, manifest)  # never publish a damaged index
    location, s3 = Location.parse(url), client or s3_client(endpoint_url)
    manifest_bytes = (directory / MANIFEST).read_bytes()
    version = version_of(manifest_bytes)
    started, total = time.perf_counter(), 0
    try:
        for relative in sorted(files):
            path = directory / relative
            s3.upload_file(str(path), location.bucket, location.key("versions", version, relative))
            total += path.stat().st_size
        s3.put_object(Bucket=location.bucket, Key=location.key("versions", version, MANIFEST), Body=manifest_bytes)
        pointer = json.dumps({"version": version, "created_unix": manifest.get("created_unix")}).encode()
        s3.put_object(Bucket=location.bucket, Key=location.key(LATEST), Body=pointer)
    except Exception as exc:
        raise _unavailable("upload to", url, exc) from None
    return Transfer(version, len(files), total + len(manifest_bytes), time.perf_counter() - started)


def pull_index(
    url: str, directory: Path, *, client: Any = None, endpoint_url: str | None = None, version: str | None = None
) -> Transfer:
    """Fetch the published index (LATEST, or `version`) into `directory`, checked, swapped in atomically."""
    directory = Path(directory)
    location, s3 = Location.parse(url), client or s3_client(endpoint_url)
    started = time.perf_counter()
    try:
        wanted = version or _latest(s3, location)
        manifest_bytes = _get(s3, location, "versions", wanted, MANIFEST)
    except NotPublishedError:
        if version is None:
            raise
        raise _gone(url, version, MANIFEST) from None
    except IndexStoreError:
        raise
    except Exception as exc:
        raise _unavailable("download from", url, exc) from None
    if version_of(manifest_bytes) != wanted:
        raise IndexStoreError(
            f"{url}: version {clip(wanted)} does not match its manifest; publish the index again"
        )
    current = directory / MANIFEST
    if current.is_file() and version_of(current.read_bytes()) == wanted:
        return Transfer(wanted, 0, 0, time.perf_counter() - started, skipped=True)
    manifest = json.loads(manifest_bytes)
    files = manifest.get(FILES)
    if not isinstance(files, dict) or not all(_safe(relative) for relative in files):
        raise IndexStoreError(f"{url}: version {wanted} has a corrupt manifest; publish the index again")
    recover_index(directory, clean=True)
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=work_prefix(directory), dir=directory.parent))
    try:
        total = 0
        for relative in sorted(files):
            path = work / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                s3.download_file(location.bucket, location.key("versions", wanted, relative), str(path))
            except Exception as exc:
                # a version removed while it is fetched is not an outage: say so, so the caller fetches the newest.
                # Retention deletes a version's manifest first; a file missing beside its manifest is damage.
                if _not_found(exc) and not _exists(s3, location, "versions", wanted, MANIFEST):
                    raise _gone(url, wanted, relative) from None
                raise _unavailable("download from", url, exc) from None
            total += path.stat().st_size
        (work / MANIFEST).write_bytes(manifest_bytes)
        verify_files(work, manifest)
        swap_into_place(work, directory)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Transfer(wanted, len(files), total + len(manifest_bytes), time.perf_counter() - started)


def read_object(url: str, parts: tuple[str, ...], *, client: Any) -> bytes:
    """One object under `url` (NotPublishedError: not there)."""
    return _get(client, Location.parse(url), *parts)


def latest_version(url: str, *, client: Any) -> str:
    """The version id LATEST names (NotPublishedError: none yet)."""
    return _latest(client, Location.parse(url))


def _latest(s3: Any, location: Location) -> str:
    pointer = json.loads(_get(s3, location, LATEST))
    version = pointer.get("version") if isinstance(pointer, dict) else None
    if not isinstance(version, str) or len(version) != 16 or not all(c in "0123456789abcdef" for c in version):
        raise IndexStoreError(f"s3://{location.bucket}/{location.key(LATEST)}: not an index pointer")
    return version


def _get(s3: Any, location: Location, *parts: str) -> bytes:
    key = location.key(*parts)
    try:
        body: bytes = s3.get_object(Bucket=location.bucket, Key=key)["Body"].read()
    except Exception as exc:
        if _not_found(exc):
            raise NotPublishedError(
                f"s3://{location.bucket}/{key}: not found; has an index been published?"
            ) from None
        raise
    return body


def _exists(s3: Any, location: Location, *parts: str) -> bool:
    """Whether the object is there; True when that cannot be told (the store's error is then reported as is)."""
    try:
        s3.head_object(Bucket=location.bucket, Key=location.key(*parts))
    except Exception as exc:
        return not _not_found(exc)
    return True


def _safe(relative: object) -> bool:
    if not isinstance(relative, str) or not relative:
        return False
    path = PurePosixPath(relative)
    return not path.is_absolute() and ".." not in path.parts and relative != MANIFEST


def _not_found(exc: Exception) -> bool:
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in ("NoSuchKey", "404", "NoSuchBucket")


def _gone(url: str, version: str, relative: str) -> VersionGoneError:
    return VersionGoneError(
        f"{clip(url)}: version {version} is no longer in the store ({relative} is gone with its manifest: a newer "
        "version replaced it and the updater's retention removed it); fetch the newest version"
    )


def _unavailable(action: str, url: str, exc: Exception) -> BackendUnavailableError:
    return BackendUnavailableError(f"cannot {action} {clip(url)}: {type(exc).__name__}: {clip(str(exc), 200)}")
