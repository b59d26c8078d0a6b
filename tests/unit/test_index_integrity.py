"""Damaged input and damaged or half-swapped indexes: one line naming the file, never a traceback or a served lie.

Covered: corrupt deflate data in a bundle's `.jsonl.gz` (API, `skbqa ingest`, QA files); the per-file size and
CRC-32 that ingest records in the manifest and `open_index` checks (truncated and bit-flipped `.npz`, `.gz` and
`.npy` files, through the API, `skbqa ask` and `skbqa serve`; indexes without checksums still open, with a
warning); an ingest killed between the two renames of its swap (the next open or ingest restores the previous
index) and work directories of killed ingests (the next ingest removes them, never a live one's).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skbqa.cli import main as cli
from skbqa.common.errors import BundleError, IndexStoreError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest import builder
from skbqa.ingest.builder import ingest
from skbqa.skb.loaders import load_skb
from skbqa.skb.qa import load_qa
from skbqa.stores import index as index_module
from skbqa.stores.index import MANIFEST, open_index
from tests.helpers import QA, HashingEncoder, write_bundle

FILES = "files"  # the manifest's key for the size and CRC-32 of every file

# --- bundles: corrupt deflate data ------------------------------------------------------------------------------


def corrupt_gzip(path: Path, where: str) -> Path:
    """Gzip `path` into `path.gz` with damaged deflate data: "header" makes the first block name the reserved block
    type; "middle" inverts 20 bytes inside the stream (zlib then meets an invalid code)."""
    data = bytearray(gzip.compress(path.read_bytes(), mtime=0))
    if where == "header":
        data[10] = 0xFF  # BFINAL=1, BTYPE=11 (reserved): "invalid block type"
    else:
        for i in range(20, 40):
            data[i] ^= 0xFF
    target = path.with_name(path.name + ".gz")
    target.write_bytes(bytes(data))
    path.unlink()
    return target


@pytest.mark.parametrize("where", ["header", "middle"])
@pytest.mark.parametrize("stem", ["nodes", "edges"])
def test_corrupt_deflate_in_a_bundle_is_a_bundle_error(tmp_path: Path, stem: str, where: str) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    corrupt_gzip(bundle / f"{stem}.jsonl", where)
    with pytest.raises(BundleError) as exc:
        load_skb(bundle)
    assert exc.value.file == f"{stem}.jsonl.gz"
    assert str(exc.value).startswith(f"{stem}.jsonl.gz: cannot read file: ")


def test_corrupt_deflate_in_a_qa_file_is_a_bundle_error(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QA))
    with pytest.raises(BundleError, match=r"^qa\.jsonl\.gz: cannot read file: corrupt gzip data"):
        load_qa(corrupt_gzip(path, "header"))


def test_skbqa_ingest_of_corrupt_deflate_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    corrupt_gzip(bundle / "nodes.jsonl", "middle")
    monkeypatch.setattr("skbqa.models.local_encoder.load_encoder", lambda *a, **k: HashingEncoder())
    status = cli.main(["ingest", str(bundle), "--index", str(tmp_path / "idx"), "--no-progress"])
    err = capsys.readouterr().err.splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith("skbqa: error: nodes.jsonl.gz: cannot read file: "), err
    assert not (tmp_path / "idx").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# --- indexes: checksums in the manifest, checked on open --------------------------------------------------------


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("integrity")
    ingest(write_bundle(root / "bundle"), root / "idx", HashingEncoder(), progress=False)
    return root / "idx"


@pytest.fixture
def index(built_index: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "idx"
    shutil.copytree(built_index, copy)
    return copy


def damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: len(data) // 2]
    else:  # a flipped 16-byte block three quarters in: same size, still a readable file for most formats
        at = len(data) * 3 // 4
        for i in range(at, min(at + 16, len(data))):
            data[i] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGES = [
    ("graph/graph.npz", "truncate"),  # BadZipFile before
    ("vectors/name/vectors.npz", "flip"),  # BadZipFile (bad CRC-32) before
    ("bm25/bm25/data.csc.index.npy", "flip"),  # memory-mapped: served with wrong scores before
    ("nodes/lexicon.npz", "flip"),  # loaded lazily: served before
    ("nodes/nodes.json.gz", "flip"),
    ("bm25/bm25_types.npy", "truncate"),
]


@pytest.mark.parametrize(("relative", "how"), DAMAGES)
def test_a_damaged_index_file_is_refused_by_name(index: Path, relative: str, how: str) -> None:
    damage(index / relative, how)
    with pytest.raises(IndexStoreError) as exc:
        EmbeddedEngine.open(index, encoder=HashingEncoder())
    message = str(exc.value)
    assert message.startswith(f"{index / relative}: index file is damaged ("), message
    assert "re-run skbqa ingest" in message and "\n" not in message


def test_loaders_of_part_of_an_index_verify_the_part_they_read(index: Path) -> None:
    """The NebulaGraph loader reads nodes and graph, the SAGE build also two vector sets: a flipped block in what
    they read is refused by name; damage elsewhere (BM25 here) is not theirs to refuse."""
    from skbqa.stores.graph.nebula_loader import read_index_graph
    from skbqa.strategies.sage.graph_build import build_for_index

    damage(index / "bm25" / "bm25_types.npy", "truncate")
    nodes, _ = read_index_graph(index)
    assert len(nodes) > 0
    damage(index / "graph" / "graph.npz", "flip")
    for load in (read_index_graph, build_for_index):
        with pytest.raises(IndexStoreError, match=r"graph\.npz: index file is damaged \(CRC-32"):
            load(index)


def test_a_missing_index_file_is_refused_by_name(index: Path) -> None:
    (index / "vectors" / "document" / "vectors.npz").unlink()
    with pytest.raises(IndexStoreError, match=r"vectors\.npz: index file is damaged \(file is missing\)"):
        open_index(index)


def test_the_manifest_records_size_and_crc32_of_every_file(index: Path) -> None:
    files = json.loads((index / MANIFEST).read_text())[FILES]
    on_disk = {p.relative_to(index).as_posix(): p for p in index.rglob("*") if p.is_file()}
    assert set(files) == set(on_disk) - {MANIFEST}
    for relative, entry in files.items():
        assert entry["bytes"] == on_disk[relative].stat().st_size
        assert len(entry["crc32"]) == 8 and int(entry["crc32"], 16) >= 0


def test_an_index_without_checksums_still_opens_with_a_warning(
    index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = json.loads((index / MANIFEST).read_text())
    del manifest[FILES]
    (index / MANIFEST).write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="skbqa.stores.index"):
        engine = EmbeddedEngine(open_index(index), HashingEncoder())
    assert engine.ask("chemistry", strategy="bm25", k=3).items
    assert any("no file checksums" in r.getMessage() for r in caplog.records), caplog.text


def test_an_old_index_with_a_damaged_npz_is_still_one_error(index: Path) -> None:
    """Without checksums the loaders' own errors (BadZipFile, EOFError, zlib.error) become IndexStoreError."""
    manifest = json.loads((index / MANIFEST).read_text())
    del manifest[FILES]
    (index / MANIFEST).write_text(json.dumps(manifest))
    damage(index / "graph" / "graph.npz", "truncate")
    with pytest.raises(IndexStoreError, match=r"graph: index is incomplete or damaged"):
        open_index(index)


@pytest.mark.parametrize(
    "argv",
    [["ask", "--index", "{index}", "chemistry"], ["serve", "--index", "{index}", "--port", "0"]],
    ids=["ask", "serve"],
)
@pytest.mark.parametrize(("relative", "how"), [DAMAGES[0], DAMAGES[1], DAMAGES[4]])
def test_skbqa_ask_and_serve_on_a_damaged_index_print_one_line(
    index: Path, capsys: pytest.CaptureFixture[str], argv: list[str], relative: str, how: str
) -> None:
    damage(index / relative, how)
    status = cli.main([a.format(index=index) for a in argv])
    err = capsys.readouterr().err.splitlines()
    assert status == 1  # IndexStoreError: the CLI's exit status for errors other than bad usage or input
    assert err == [err[0]] and err[0].startswith(f"skbqa: error: {index / relative}: index file is damaged"), err


# --- the swap: an ingest killed between its renames, and work directories left by killed ingests -------------


@pytest.fixture
def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    try:
        os.kill(child.pid, 0)
    except ProcessLookupError:
        return child.pid
    pytest.skip("the finished child's PID was reused at once")


@pytest.fixture
def live_pid() -> Iterator[int]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child.pid
    child.kill()
    child.wait()


@pytest.fixture
def zombie_pid() -> Iterator[int]:
    """A child that has exited and is not reaped yet: signal 0 still finds it."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 30
    while stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        if time.monotonic() > deadline:
            pytest.fail("the child did not exit")
        time.sleep(0.02)
    if not stat.is_file():
        pytest.skip("no /proc here")
    yield child.pid
    child.wait()


def host() -> str:
    """This machine's name as leftover directories carry it (`PID@HOST`)."""
    tag = getattr(index_module, "owner_tag", lambda: f"0@{socket.gethostname()}")()
    return str(tag).split("@", 1)[1]


class Killed(BaseException):
    """What the process sees of SIGKILL: nothing runs after it (here: the rename back is refused too)."""


def test_an_ingest_killed_between_its_renames_is_recovered_on_open(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead_pid: int
) -> None:
    manifest = (index / MANIFEST).read_bytes()
    dead_tag = f"{dead_pid}@{host()}"
    monkeypatch.setattr(index_module, "owner_tag", lambda: dead_tag, raising=False)
    calls = []
    real_replace = os.replace

    def replace(src: Path, dst: Path) -> None:
        calls.append((Path(src).name, Path(dst).name))
        if len(calls) >= 2:  # the second rename (work → index) and the rename back never happen
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(builder.os, "replace", replace)
    with pytest.raises(Killed):
        ingest(write_bundle(tmp_path / "b2"), index, HashingEncoder(), progress=False)
    monkeypatch.undo()
    assert not index.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".idx.old-")] == [
        f".idx.old-{dead_pid}@{host()}"
    ]
    engine = EmbeddedEngine(open_index(index), HashingEncoder())
    assert (index / MANIFEST).read_bytes() == manifest
    assert engine.ask("chemistry", strategy="bm25", k=3).items
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_ingest_killed_between_its_renames_is_recovered_by_the_next_ingest(
    index: Path, tmp_path: Path, dead_pid: int
) -> None:
    old = tmp_path / f".idx.old-{dead_pid}@{host()}"
    os.replace(index, old)
    work = tmp_path / f".idx.ingest-{dead_pid}@{host()}-k1lled_x"
    (work / "nodes").mkdir(parents=True)
    encoder = HashingEncoder(name="another/64")
    with pytest.raises(IndexStoreError, match="was built with encoder 'test-hashing/64'"):
        ingest(write_bundle(tmp_path / "b2"), index, encoder, progress=False)  # the restored index still protects
    assert (index / MANIFEST).is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_leftover_old_index_is_removed_by_the_next_ingest(index: Path, tmp_path: Path, dead_pid: int) -> None:
    """Killed after the second rename, before the old index was removed."""
    shutil.copytree(index, tmp_path / f".idx.old-{dead_pid}")  # the older name, without host
    ingest(write_bundle(tmp_path / "b2"), index, HashingEncoder(), progress=False)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_work_directories_of_killed_ingests_are_removed_never_a_live_ones(
    index: Path, tmp_path: Path, dead_pid: int, live_pid: int, zombie_pid: int
) -> None:
    keep = [
        f".idx.ingest-{live_pid}@{host()}-running1",  # still running
        f".idx.ingest-{dead_pid}@another-host.example-remote1",  # cannot tell: another machine
        ".idx.ingest-legacy12",  # an older skbqa's name, without owner
        f".other.ingest-{dead_pid}@{host()}-notours1",  # another index's
    ]
    gone = [
        f".idx.ingest-{dead_pid}@{host()}-killed01",
        f".idx.ingest-{dead_pid}@{host()}-killed02",
        f".idx.ingest-{os.getpid()}@{host()}-restart1",  # this PID's, before a restart (a container's PID 1)
        f".idx.ingest-{zombie_pid}@{host()}-zombie01",  # exited, not yet reaped by whoever adopted it
    ]
    for name in keep + gone:
        (tmp_path / name / "vectors").mkdir(parents=True)
    seen: list[str] = []

    class Watching(HashingEncoder):
        def encode(self, texts, *, progress=None):  # type: ignore[no-untyped-def]
            seen.extend(p.name for p in tmp_path.iterdir() if p.name.startswith(".idx.ingest-"))
            return super().encode(texts, progress=progress)

    ingest(write_bundle(tmp_path / "b2"), index, Watching(), progress=False)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left == sorted(keep)
    ours = set(seen) - set(keep)
    assert len(ours) == 1 and next(iter(ours)).startswith(f".idx.ingest-{os.getpid()}@{host()}-"), seen


def test_an_old_index_whose_owner_runs_is_not_restored(index: Path, tmp_path: Path, live_pid: int) -> None:
    """Between the two renames of a live ingest the index is briefly missing: its old copy is not taken back."""
    old = tmp_path / f".idx.old-{live_pid}@{host()}"
    os.replace(index, old)
    with pytest.raises(IndexStoreError, match="is not an skbqa index"):
        open_index(index)
    assert old.is_dir() and not index.exists()


@pytest.mark.parametrize("owner", ["another-host.example", "this-pid"])
def test_an_old_index_of_another_host_or_of_this_pid_is_restored(index: Path, tmp_path: Path, owner: str) -> None:
    """A serving pod cannot tell whether the ingest pod that left it runs; a restarted container reuses its PID."""
    tag = f"{os.getpid()}@{host()}" if owner == "this-pid" else f"1@{owner}"
    os.replace(index, tmp_path / f".idx.old-{tag}")
    assert EmbeddedEngine(open_index(index), HashingEncoder()).ask("chemistry", strategy="bm25", k=3).items
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_restoring_under_a_live_ingest_of_another_host_makes_that_ingest_fail_not_lose_the_index(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another host's reader opens the index between the ingest's two renames and takes the old one back."""
    manifest = (index / MANIFEST).read_bytes()
    monkeypatch.setattr(index_module, "owner_tag", lambda: "1@ingest-pod.example")
    real_replace = os.replace
    calls = []

    def replace(src: Path, dst: Path) -> None:
        real_replace(src, dst)
        calls.append(src)
        if len(calls) == 1:
            open_index(index)  # the reader: the index is missing, its old copy is another host's

    monkeypatch.setattr(builder.os, "replace", replace)
    with pytest.raises(
        IndexStoreError, match=r"cannot rename the new index into place .*; the previous index is kept"
    ):
        ingest(write_bundle(tmp_path / "b2"), index, HashingEncoder(), progress=False)
    monkeypatch.undo()
    assert (index / MANIFEST).read_bytes() == manifest
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
