"""Writing a synthetic bundle: JSON lines through a background gzip thread, temporary names, progress lines.

Compression (gzip level 1) runs in a background thread while the caller formats the next chunk; the gzip header
has mtime 0 and no file name, so equal arguments give byte-identical files.
"""

from __future__ import annotations

import gzip as gzip_module
import logging
import queue
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from skbqa.synth.graph import SynthGraph

logger = logging.getLogger(__name__)

_CHUNK_EDGES = 500_000


def _write_edges(graph: SynthGraph, writer: _LineWriter) -> None:
    for r in graph.relations:
        fmt = '{"src": %d, "type": "' + r.name + '", "dst": %d}\n'
        for lo in range(0, r.size, _CHUNK_EDGES):
            src = r.src[lo : lo + _CHUNK_EDGES].tolist()
            dst = r.dst[lo : lo + _CHUNK_EDGES].tolist()
            writer.write("".join([fmt % pair for pair in zip(src, dst, strict=True)]))


# ----------------------------------------------------------------------------------------------- output


def _tmp(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


class _LineWriter:
    """Encodes in the caller's thread, compresses and writes in a background thread (zlib releases the GIL)."""

    def __init__(self, path: Path, compress: bool) -> None:
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in __exit__
        self._gz = (
            gzip_module.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=1, mtime=0)
            if compress
            else None
        )
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="synth-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            if self._error is None:
                try:
                    (self._raw if self._gz is None else self._gz).write(data)
                except BaseException as exc:  # reported to the caller on the next write or at exit
                    self._error = exc

    def write(self, text: str) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(text.encode("utf-8"))

    def __enter__(self) -> _LineWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._gz is not None:
            self._gz.close()
        self._raw.close()
        if exc is None and self._error is not None:
            raise self._error


class _Progress:
    def __init__(self, enabled: bool, started: float) -> None:
        self._enabled = enabled
        self._started = started

    def __call__(self, message: str) -> None:
        line = f"[synth {time.perf_counter() - self._started:7.1f}s] {message}"
        logger.debug(line)
        if self._enabled:
            print(line, file=sys.stderr, flush=True)
