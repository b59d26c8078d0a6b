"""`skbqa.devstack.s3_files`: the S3 subset Tansu's object store client uses, served from a directory.

Conditional writes are what keep two producers of one partition from taking the same offset, so they are checked
here as S3 defines them; the rest is what Tansu's s3 engine calls (listing by prefix with pagination, ranges).
"""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from skbqa.devstack.s3_files import ObjectServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    yield from _serve(tmp_path)


def _serve(root: Path) -> Iterator[str]:
    httpd = ObjectServer(("127.0.0.1", 0), root, fsync=False, log_requests=False)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        _call("PUT", f"{base}/tansu")
        yield f"{base}/tansu"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def own_s3(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The server's endpoint URL, serving bucket "tansu" from `root`, with the dummy credentials boto3 needs (for
    the tests that reach it through boto3)."""
    from tests.integration.moto_s3 import CREDENTIALS

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    for bucket_url in _serve(root):
        yield bucket_url.rsplit("/", 1)[0]


def _call(
    method: str, url: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url, data=body if method == "PUT" else None, method=method, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_put_get_head_delete_round_trip(server: str) -> None:
    status, headers, _ = _call("PUT", f"{server}/a/b.json", b"{}")
    assert status == 200 and headers["ETag"].startswith('"')
    status, got, body = _call("GET", f"{server}/a/b.json")
    assert (status, body, got["ETag"]) == (200, b"{}", headers["ETag"])
    assert "GMT" in got["Last-Modified"]
    assert _call("HEAD", f"{server}/a/b.json")[0] == 200
    assert _call("DELETE", f"{server}/a/b.json")[0] == 204
    assert _call("GET", f"{server}/a/b.json")[0] == 404


def test_conditional_writes_let_one_writer_win(server: str) -> None:
    assert _call("PUT", f"{server}/w.json", b"1", {"If-None-Match": "*"})[0] == 200
    assert _call("PUT", f"{server}/w.json", b"2", {"If-None-Match": "*"})[0] == 412  # create only: exists
    etag = _call("HEAD", f"{server}/w.json")[1]["ETag"]
    assert _call("PUT", f"{server}/w.json", b"3", {"If-Match": etag})[0] == 200
    assert _call("PUT", f"{server}/w.json", b"4", {"If-Match": etag})[0] == 412  # that version is gone
    assert _call("PUT", f"{server}/new.json", b"5", {"If-Match": etag})[0] == 412  # nothing to replace
    assert _call("GET", f"{server}/w.json")[2] == b"3"
    new_etag = _call("HEAD", f"{server}/w.json")[1]["ETag"]
    assert _call("GET", f"{server}/w.json", headers={"If-None-Match": new_etag})[0] == 304


def test_concurrent_creates_of_one_key_have_exactly_one_winner(server: str) -> None:
    statuses: list[int] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        status = _call("PUT", f"{server}/offset.batch", b"%d" % i, {"If-None-Match": "*"})[0]
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [412] * 7


def test_listing_by_prefix_with_delimiter_and_pagination(server: str) -> None:
    for key in ("p/records/002.batch", "p/records/001.batch", "p/watermark.json", "q/x.json"):
        _call("PUT", f"{server}/{key}", b"x")
    body = _call("GET", f"{server}?list-type=2&prefix=p/records/")[2].decode()
    assert re.findall(r"<Key>(.*?)</Key>", body) == ["p/records/001.batch", "p/records/002.batch"]
    assert "<Size>1</Size>" in body
    body = _call("GET", f"{server}?list-type=2&prefix=p/&delimiter=/")[2].decode()
    assert re.findall(r"<Key>(.*?)</Key>", body) == ["p/watermark.json"]
    assert re.findall(r"<CommonPrefixes><Prefix>(.*?)</Prefix>", body) == ["p/records/"]
    first = _call("GET", f"{server}?list-type=2&prefix=p/&max-keys=2")[2].decode()
    assert "<IsTruncated>true</IsTruncated>" in first
    token = re.findall(r"<NextContinuationToken>(.*?)</NextContinuationToken>", first)[0]
    rest = _call("GET", f"{server}?list-type=2&prefix=p/&max-keys=2&continuation-token={token}")[2].decode()
    assert re.findall(r"<Key>(.*?)</Key>", first + rest) == [
        "p/records/001.batch",
        "p/records/002.batch",
        "p/watermark.json",
    ]


def test_range_reads(server: str) -> None:
    _call("PUT", f"{server}/r", b"0123456789")
    status, headers, body = _call("GET", f"{server}/r", headers={"Range": "bytes=2-4"})
    assert (status, body, headers["Content-Range"]) == (206, b"234", "bytes 2-4/10")
    assert _call("GET", f"{server}/r", headers={"Range": "bytes=-3"})[2] == b"789"


def test_objects_survive_a_new_server_on_the_same_directory(tmp_path: Path) -> None:
    for url in _serve(tmp_path):
        _call("PUT", f"{url}/kept/a.json", b"kept")
        etag = _call("HEAD", f"{url}/kept/a.json")[1]["ETag"]
    (tmp_path / "tansu" / "leftover.1.tmp").write_bytes(b"torn")  # a write cut short by a kill
    for url in _serve(tmp_path):
        status, headers, body = _call("GET", f"{url}/kept/a.json")
        assert (status, body, headers["ETag"]) == (200, b"kept", etag)
        assert "kept/a.json" in _call("GET", f"{url}?list-type=2&prefix=kept/")[2].decode()
    assert not (tmp_path / "tansu" / "leftover.1.tmp").exists()


def test_a_put_that_expects_100_continue_is_answered_at_once(server: str) -> None:
    """boto3 sends `Expect: 100-continue` with every PUT body (a snapshot push, `stack up --snapshots`): the interim
    reply must leave at once, not wait in the write buffer until the client gives up waiting (1 s per object)."""
    import http.client
    import time

    host, port = server.split("//")[1].split("/")[0].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    started = time.perf_counter()
    connection.putrequest("PUT", "/tansu/expect")
    connection.putheader("Content-Length", "5")
    connection.putheader("Expect", "100-continue")
    connection.endheaders()
    connection.sock.settimeout(0.5)  # an interim reply held back would time this read out
    interim = connection.sock.recv(64)
    assert interim.startswith(b"HTTP/1.1 100"), interim
    connection.sock.settimeout(5)
    connection.send(b"hello")
    reply = connection.getresponse()
    assert reply.status == 200 and time.perf_counter() - started < 0.5
    connection.close()
    assert _call("GET", f"{server}/expect")[2] == b"hello"


def test_a_file_over_8_mib_goes_up_in_parts_and_comes_back_whole(server: str, tmp_path: Path, monkeypatch) -> None:
    """boto3's `upload_file` (a snapshot push) sends files over 8 MiB as multipart uploads (s3_multipart.py)."""
    boto3 = pytest.importorskip("boto3")
    from tests.integration.moto_s3 import CREDENTIALS

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * (9 * 4096 + 7))  # 9 MiB and a bit: two parts
    client = boto3.client("s3", endpoint_url=server.rsplit("/", 1)[0])
    client.upload_file(str(big), "tansu", "kb/big.bin")
    assert client.get_object(Bucket="tansu", Key="kb/big.bin")["Body"].read() == big.read_bytes()
    # a completion naming a part never uploaded is refused, and nothing is written
    upload = client.create_multipart_upload(Bucket="tansu", Key="kb/half")["UploadId"]
    with pytest.raises(Exception, match="InvalidPart"):
        client.complete_multipart_upload(
            Bucket="tansu", Key="kb/half", UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]},
        )  # fmt: skip
    assert _call("HEAD", f"{server}/kb/half")[0] == 404
