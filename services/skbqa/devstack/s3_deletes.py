"""Batch deletes for the file-backed S3 server (`devstack.s3_files`): ``POST /BUCKET?delete`` (DeleteObjects), which
the updater's snapshot retention sends (changes/retention.py) to remove a shipped version's files in one request.

As S3 does, deleting a key that does not exist succeeds, so a retried batch answers the same; with
``<Quiet>true</Quiet>`` only errors are listed (there are none here: a key is a file name's hash, never refused).
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from xml.sax.saxutils import escape

_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"
MAX_KEYS = 1000  # S3's own limit per request


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_delete(body: bytes) -> tuple[list[str], bool] | None:
    """(the keys, quiet) of a DeleteObjects body; None when it is malformed or lists more than S3 allows."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None
    if _local(root.tag) != "Delete":
        return None
    keys = [
        child.text or ""
        for element in root
        if _local(element.tag) == "Object"
        for child in element
        if _local(child.tag) == "Key"
    ]
    quiet = any(_local(e.tag) == "Quiet" and (e.text or "").strip().lower() == "true" for e in root)
    if not keys or len(keys) > MAX_KEYS or not all(keys):
        return None
    return keys, quiet


def deleted_xml(keys: list[str], quiet: bool) -> bytes:
    listed = "" if quiet else "".join(f"<Deleted><Key>{escape(key)}</Key></Deleted>" for key in keys)
    return f'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="{_XMLNS}">{listed}</DeleteResult>'.encode()
