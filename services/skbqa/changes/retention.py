"""Retention of shipped snapshots: the updater keeps the newest `keep` versions under `PREFIX/versions/` and deletes
the older ones after each ship (changes/shipping.py), so the store does not grow by a whole index per fold.

What is never deleted: the versions named in `protect` (the one served and the one just shipped), the one LATEST
names (what a starting pod pulls), and anything that is not a version of this prefix: only keys of the form
`PREFIX/versions/<16 hex digits>/...` are ever listed for deletion, so LATEST, other prefixes of the bucket and
foreign keys under `versions/` stay. Versions are ordered by what their manifest says (read once per version and
remembered: a version's id is its manifest's hash, so it never changes): the ingest they descend from (a re-ingest
published to the same prefix starts again at knowledge-base version 0, and is newer than every fold of the one
before), then the knowledge-base version; not by the store's LastModified, which S3 and moto give to the second,
so folds a second apart would tie.

A version is deleted manifest first, all manifests in the first request: from then on a replica that starts to
fetch it is told at once that it is gone (`VersionGoneError`), and one already fetching it fails on its next
missing file with the same error and then fetches the newest (`ingest.snapshot_fetch`). A version without a
manifest is a push that failed (a fold that was retried); it is removed once it is older than every version kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from skbqa.common.errors import BackendUnavailableError, InvalidInputError, clip
from skbqa.ingest.object_store import Location, NotPublishedError, latest_version, read_object
from skbqa.stores.index import MANIFEST, kb_version

logger = logging.getLogger(__name__)

DEFAULT_KEEP = 3  # the newest shipped versions kept: the served one and two a lagging replica may still fetch
_BATCH = 1000  # DeleteObjects takes at most 1000 keys per request
_HEX = frozenset("0123456789abcdef")
# what a store without DeleteObjects answers; the keys are then deleted one request each
_NO_BATCH_DELETE = frozenset({"NotImplemented", "MethodNotAllowed", "501", "405"})


def checked_keep(value: object) -> int:
    """The retention setting as an integer of at least 1; anything else is refused in one line (keeping 0 versions
    would delete the one replicas are sent to)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(
            f"--snapshots-keep must be an integer of at least 1 (the newest shipped versions kept), got "
            f"{clip(repr(value))}"
        )
    return value


@dataclass
class _Version:
    keys: list[str] = field(default_factory=list)
    bytes: int = 0
    manifest_time: float | None = None  # None: no manifest (a push that did not finish)
    newest_time: float = 0.0


@dataclass(frozen=True)
class Pruned:
    kept: tuple[str, ...]  # newest first
    deleted: tuple[str, ...]
    objects: int
    bytes: int


def prune_versions(
    client: Any, url: str, keep: int, protect: Iterable[str] = (), known: dict[str, tuple[int, int]] | None = None
) -> Pruned:
    """Delete the versions under `url` older than the newest `keep` (see the module's docstring for what is
    kept); raises BackendUnavailableError when the store cannot be listed or a delete is refused. `known`: the
    order (`_order`) of each version id read so far, filled in here (the caller keeps it between calls)."""
    keep = checked_keep(keep)
    location = Location.parse(url)
    versions = _list_versions(client, location)
    protected = set(protect)
    with contextlib.suppress(NotPublishedError):  # nothing published yet: nothing more to protect
        protected.add(latest_version(url, client=client))
    known = {} if known is None else known
    for name in [name for name in known if name not in versions]:  # deleted since: forgotten, so it stays small
        del known[name]
    for name, version in versions.items():
        if version.manifest_time is not None and name not in known:
            known[name] = _order(client, url, name)
    complete = sorted(
        (item for item in versions.items() if item[1].manifest_time is not None),
        key=lambda item: (known[item[0]], item[1].manifest_time or 0.0),
        reverse=True,
    )
    kept = [name for name, _ in complete[:keep]] + [name for name in protected if name in versions]
    oldest_kept = min((versions[name].manifest_time or 0.0 for name in kept), default=0.0)
    doomed = [name for name, _ in complete[keep:] if name not in protected]
    doomed += [
        name
        for name, version in versions.items()
        if version.manifest_time is None and version.newest_time < oldest_kept and name not in protected
    ]
    if not doomed:
        return Pruned(tuple(dict.fromkeys(kept)), (), 0, 0)
    manifests = {location.key("versions", name, MANIFEST) for name in doomed}
    keys = [key for name in doomed for key in versions[name].keys]
    _delete(client, location.bucket, [key for key in keys if key in manifests])  # first: no new fetch starts
    _delete(client, location.bucket, [key for key in keys if key not in manifests])
    pruned = Pruned(
        tuple(dict.fromkeys(kept)),
        tuple(doomed),
        sum(len(versions[name].keys) for name in doomed),
        sum(versions[name].bytes for name in doomed),
    )
    logger.info(
        "snapshot retention: deleted %d shipped versions from %s (%d objects, %.1f MiB), kept %d",
        len(pruned.deleted), url, pruned.objects, pruned.bytes / 2**20, len(pruned.kept),
    )  # fmt: skip
    return pruned


def _order(client: Any, url: str, name: str) -> tuple[int, int]:
    """(when the ingest it descends from ran, its knowledge-base version), from a shipped manifest (a fold carries
    `ingested_unix` over; a fresh ingest has only `created_unix`); (-1, -1), the oldest, for one unreadable."""
    try:
        manifest: Any = json.loads(read_object(url, ("versions", name, MANIFEST), client=client))
        if not isinstance(manifest, dict):
            raise ValueError("not an object")
        ingested: Any = manifest.get("ingested_unix", manifest.get("created_unix")) or 0
        return int(ingested), kb_version(manifest)
    except NotPublishedError:  # deleted since the listing
        return -1, -1
    except (ValueError, TypeError):
        logger.warning("snapshot retention: the manifest of %s at %s is unreadable; it sorts oldest", name, url)
        return -1, -1
    except Exception as exc:
        raise _unavailable(Location.parse(url), exc) from None


def _list_versions(client: Any, location: Location) -> dict[str, _Version]:
    prefix = location.key("versions") + "/"
    versions: dict[str, _Version] = {}
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=location.bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                key = str(entry["Key"])
                name, _, rest = key[len(prefix) :].partition("/")
                if len(name) != 16 or not set(name) <= _HEX or not rest:
                    continue  # not a version of this prefix: never touched
                version = versions.setdefault(name, _Version())
                when = entry["LastModified"].timestamp()
                version.keys.append(key)
                version.bytes += int(entry.get("Size", 0))
                version.newest_time = max(version.newest_time, when)
                if rest == MANIFEST:
                    version.manifest_time = when
    except Exception as exc:
        raise _unavailable(location, exc) from None
    return versions


def _delete(client: Any, bucket: str, keys: list[str]) -> None:
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        try:
            reply = client.delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
            )
        except Exception as exc:
            if _code(exc) not in _NO_BATCH_DELETE:
                raise _unavailable(Location(bucket, ""), exc) from None
            _delete_one_by_one(client, bucket, batch)
            continue
        errors = reply.get("Errors") or []
        if errors:
            first = errors[0]
            raise BackendUnavailableError(
                f"s3://{bucket}: {len(errors)} of {len(batch)} deletes refused, first {clip(str(first.get('Key')))}: "
                f"{clip(str(first.get('Code')))} {clip(str(first.get('Message')), 120)}"
            )


def _delete_one_by_one(client: Any, bucket: str, keys: list[str]) -> None:
    for key in keys:
        try:
            client.delete_object(Bucket=bucket, Key=key)
        except Exception as exc:
            raise _unavailable(Location(bucket, ""), exc) from None


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    return str(error.get("Code", ""))


def _unavailable(location: Location, exc: Exception) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"snapshot retention on s3://{location.bucket}/{location.prefix}: {type(exc).__name__}: "
        f"{clip(str(exc), 200)}"
    )
