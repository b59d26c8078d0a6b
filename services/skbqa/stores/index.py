"""The on-disk layout of an embedded index and the stores it holds.

```
DIR/manifest.json          model, dimensions, counts, bundle checksum, timings, size and CRC-32 of every file
DIR/nodes/                 node table (schema, ids, types, names, texts, attrs)
DIR/graph/                 CSR adjacency per edge type and direction
DIR/bm25/                  BM25 over node documents
DIR/vectors/{name,document,relations}/   one vector index per embedding set (exact, or ANN for large sets)
DIR/encoder/               the encoder itself, when it is data (the static encoder of precomputed vectors)
```

Integrity: `open_index` checks every file the manifest lists, on every open, before any loader reads it: all sizes,
then a CRC-32 streamed over each file (about 2 GB/s: +10 ms, ×1.3, on the 17 MB sample index; opening reads most
of those bytes anyway). So a truncated file or a flipped block is refused with the file's name instead of being
served, and no loader ever parses a damaged header (a wrong shape could ask for any amount of memory). Hashing
once and recording it was rejected: the index may sit on a read-only volume, and damage can come after the first
open. An index written before checksums opens with a warning.

Ingest renames its finished work over DIR in two steps (DIR → `.DIR.old-PID@HOST`, work → DIR); `recover_index`
undoes what a process killed in between leaves behind (see there).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import time
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph.base import GraphStore
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.vectors.base import VectorIndex
from skbqa.stores.vectors.exact import ExactIndex

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
EMBEDDING_SETS = ("name", "document", "relations")
FILES = "files"  # manifest key: {relative path: {"bytes": size, "crc32": 8 hex digits}}
_CHUNK = 1 << 16  # reads that stay in the CPU cache: faster than 1 MiB ones (measured)
# What the loaders raise on a damaged file: numpy's zip and header readers, gzip, zlib, a truncated array.
_DAMAGE = (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)
_T = TypeVar("_T")


@dataclass
class IndexStores:
    directory: Path
    manifest: dict[str, Any]
    nodes: NodeTable
    graph: GraphStore  # CSR arrays in process; NebulaGraph in a cluster
    bm25: Bm25Index
    vectors: Mapping[str, VectorIndex]  # exact or ANN in process; Milvus in a cluster


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not directory.exists():
        recover_index(directory)  # an ingest killed between its two renames left the index aside
    if not path.is_file():
        raise IndexStoreError(
            f"{directory} is not an skbqa index (no {MANIFEST}); build one with: skbqa ingest BUNDLE --index {directory}",
            directory=str(directory),
        )
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise IndexStoreError(f"{path}: corrupt manifest ({problem})") from None
    if not isinstance(manifest, dict):
        raise IndexStoreError(f"{path}: corrupt manifest (not a JSON object)")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexStoreError(
            f"{directory} has index format {manifest.get('format_version')}, this skbqa reads {FORMAT_VERSION}; "
            "re-run skbqa ingest"
        )
    return manifest


def load_vector_set(directory: Path, dtype: str | None = None) -> ExactIndex:
    """The set as ingest wrote it: the ANN adapter (an `ExactIndex` subclass) for large sets, else exact."""
    from skbqa.stores.vectors.ann import AnnIndex, is_ann_set

    if is_ann_set(directory):
        return AnnIndex.load(directory)
    return ExactIndex.load(directory, dtype=dtype)


def load_exact_vectors(directory: Path, dtype: str | None = None) -> ExactIndex:
    """Every vector of a set in exact form, whichever form ingest wrote (a large set is stored only as ANN)."""
    from skbqa.stores.vectors.ann import AnnIndex, is_ann_set

    if is_ann_set(directory):
        return AnnIndex.load(directory).to_exact(dtype or "float16")
    return ExactIndex.load(directory, dtype=dtype)


def open_index(directory: Path | str, *, vector_dtype: str | None = None) -> IndexStores:
    directory = Path(directory)
    manifest = read_manifest(directory)
    verify_files(directory, manifest)

    def load(part: Path, loader: Callable[[Path], _T]) -> _T:
        try:
            return loader(part)
        except _DAMAGE as exc:
            raise IndexStoreError(
                f"{part}: index is incomplete or damaged ({exc}); re-run skbqa ingest", directory=str(directory)
            ) from None

    nodes = load(directory / "nodes", NodeTable.load)
    graph = load(directory / "graph", CsrGraph.load)
    bm25 = load(directory / "bm25", Bm25Index.load)
    vectors = {
        name: load(directory / "vectors" / name, lambda d: load_vector_set(d, vector_dtype))
        for name in EMBEDDING_SETS
    }
    return IndexStores(directory, manifest, nodes, graph, bm25, vectors)


# --- checksums ----------------------------------------------------------------------------------------------


def file_checksums(directory: Path) -> dict[str, dict[str, Any]]:
    """Size and CRC-32 of every file of an index but the manifest, by path relative to `directory` (ingest
    stores this in the manifest under FILES)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = path.relative_to(directory).as_posix()
        if relative != MANIFEST and not relative.startswith("changes/"):  # the live change log: see changes.log
            out[relative] = {"bytes": path.stat().st_size, "crc32": _crc32(path)}
    return out


def verify_files(directory: Path, manifest: Mapping[str, Any], parts: tuple[str, ...] = ()) -> None:
    """Every file the manifest lists (under one of `parts`, e.g. "nodes", "vectors/name", when given: a loader
    that reads only those) has its recorded size (all checked first: cheap) and CRC-32, or IndexStoreError
    names the first that does not. CRC-32 finds accidental damage (a truncated copy, a flipped
    block), not deliberate change: whoever can rewrite a file can rewrite the manifest too."""
    files = manifest.get(FILES)
    if files is None:
        logger.warning(
            "%s has no file checksums (built by an older skbqa): damage to it would go undetected; "
            "re-run skbqa ingest to add them",
            directory,
        )
        return
    started = time.perf_counter()
    entries = _checked_entries(directory, files)
    if parts:
        wanted = tuple(directory / part for part in parts)
        entries = [(path, entry) for path, entry in entries if any(path.is_relative_to(top) for top in wanted)]
    for path, expected in entries:
        try:
            size = path.stat().st_size
        except OSError:
            raise _damaged(directory, path, "file is missing") from None
        if size != expected["bytes"]:
            raise _damaged(directory, path, f"{size:,} bytes, the manifest records {expected['bytes']:,}")
    for path, expected in entries:
        try:
            crc = _crc32(path)
        except OSError as exc:
            raise _damaged(directory, path, f"cannot read it: {exc.strerror or exc}") from None
        if crc != expected["crc32"]:
            raise _damaged(directory, path, f"CRC-32 {crc}, the manifest records {expected['crc32']}")
    logger.info(
        "%s: %d files verified in %.0f ms", directory, len(entries), (time.perf_counter() - started) * 1000
    )


def _checked_entries(directory: Path, files: Any) -> list[tuple[Path, dict[str, Any]]]:
    def valid(relative: Any, entry: Any) -> bool:
        return (
            isinstance(relative, str)
            and not Path(relative).is_absolute()
            and ".." not in Path(relative).parts
            and isinstance(entry, dict)
            and isinstance(entry.get("bytes"), int)
            and isinstance(entry.get("crc32"), str)
        )

    if not isinstance(files, dict) or not all(valid(r, e) for r, e in files.items()):
        raise IndexStoreError(
            f"{directory / MANIFEST}: corrupt manifest (bad {FILES!r} entry); re-run skbqa ingest"
        )
    return [(directory / relative, entry) for relative, entry in files.items()]


def _damaged(directory: Path, path: Path, problem: str) -> IndexStoreError:
    return IndexStoreError(
        f"{path}: index file is damaged ({problem}); re-run skbqa ingest", directory=str(directory), file=str(path)
    )


def _crc32(path: Path) -> str:
    crc = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


# --- the swap's leftovers -----------------------------------------------------------------------------------

_HOST = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "localhost"


def owner_tag() -> str:
    """`PID@HOST` of this process, as the names of ingest's work and old directories carry it."""
    return f"{os.getpid()}@{_HOST}"


def work_prefix(directory: Path) -> str:
    """Prefix of ingest's work directory beside `directory` (mkdtemp appends a random suffix)."""
    return f".{directory.name}.ingest-{owner_tag()}-"


def old_path(directory: Path) -> Path:
    """Where ingest moves the previous index while it renames the new one into place."""
    return directory.with_name(f".{directory.name}.old-{owner_tag()}")


def recover_index(directory: Path, *, clean: bool = False) -> None:
    """Undo what a killed ingest left beside `directory`.

    Restore: when `directory` is missing, the newest complete `.NAME.old-PID@HOST` whose owner is not known to run
    is renamed back. A live ingest on this host is skipped: it is between its two renames for microseconds. One on
    another host cannot be told from a dead one and is restored anyway; if it was in fact live, its second rename
    then fails and it exits with an error, the previous index in place (nothing is lost either way).
    Clean (`clean=True`, what ingest does): `.NAME.ingest-PID@HOST-*` work directories, and old directories beside
    an existing index, are removed when their owner is gone: HOST is this host and `os.kill(PID, 0)` finds no such
    process, or PID is this process's (a restarted container's PID 1 reused; one process runs one ingest of an
    index at a time). Others (a live PID, another host, a name without PID from an older skbqa) are never
    removed; the last are logged."""
    parent = directory.parent
    try:
        entries = list(parent.iterdir()) if parent.is_dir() else []
    except OSError:
        return
    old_name = re.compile(re.escape(f".{directory.name}.old-") + r"(\d+)(?:@([A-Za-z0-9._-]+))?")
    work_name = re.compile(re.escape(f".{directory.name}.ingest-") + r"(?:(\d+)@([A-Za-z0-9._-]+)-)?[a-z0-9_]+")
    olds = {p: _owner(m.group(1), m.group(2)) for p in entries if (m := old_name.fullmatch(p.name))}
    if not directory.exists():
        complete = [p for p, owner in olds.items() if owner != "running" and (p / MANIFEST).is_file()]
        if complete:
            newest = max(complete, key=lambda p: (p / MANIFEST).stat().st_mtime)
            try:
                os.rename(newest, directory)
                logger.warning("restored %s from %s, left by an ingest killed while swapping", directory, newest)
            except OSError as exc:  # another process restored it first, or the parent is read-only
                logger.warning("cannot restore %s from %s: %s", directory, newest, exc)
            del olds[newest]
    if not clean:
        return
    stale = (
        [p for p, owner in olds.items() if owner == "gone"] if directory.exists() else []
    )  # never the only copy
    for path in entries:
        match = work_name.fullmatch(path.name)
        if match is None or not path.is_dir():
            continue
        if match.group(1) is None:
            logger.warning("%s: work directory of an older skbqa's ingest; remove it once none runs", path)
        elif _owner(match.group(1), match.group(2)) == "gone":
            stale.append(path)
    for path in stale:
        logger.info("removing %s, left by a killed ingest", path)
        shutil.rmtree(path, ignore_errors=True)


def _owner(pid: str, host: str | None) -> str:
    """ "running", "gone" or "unknown": the state of the process that named a leftover `PID@HOST` (an older
    skbqa's `.old-PID` has no HOST: it was this host's)."""
    if host is not None and host != _HOST:
        return "unknown"
    if int(pid) == os.getpid():
        return "gone"  # this process is the one recovering, not in the middle of an ingest of this index
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:  # it exists, under another user
        return "running"
    except (OSError, OverflowError):
        return "unknown"
    return "gone" if _is_zombie(int(pid)) else "running"


def _is_zombie(pid: int) -> bool:
    """Linux: the process has exited and waits to be reaped (signal 0 still finds it; an init that reaps
    orphans late keeps a killed fold's PID answering)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :][:1] in ("Z", "X")


def kb_version(manifest: dict[str, Any]) -> int:
    """The knowledge-base version an index's manifest is at (0: as ingested; each folded batch of changes +1)."""
    return int(manifest.get("kb_version", 0))
