"""`skbqa update` (apply a change file to an index, or send it to a server) and `skbqa compact` (fold the change
log into the snapshot); the change format is in `skbqa.changes.format` and docs/updates.md."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from skbqa.cli.remote import add_target_arguments, open_client, refuse_remote_flags
from skbqa.common.errors import InvalidInputError


def add_update_parsers(sub: Any) -> None:
    p = sub.add_parser("update", help="apply a change file (.jsonl[.gz]) to an index or a running server")
    p.add_argument(
        "changes", type=Path, help="one change per line: upsert_node, delete_node, add_edge, remove_edge"
    )
    add_target_arguments(p)
    p.add_argument(
        "--idempotency-key",
        metavar="KEY",
        default=None,
        help="with --server: send the batch under this key (1-128 printable ASCII; default: a fresh one, printed); "
        "resending the same file with the same key returns the first answer and applies nothing again",
    )
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    c = sub.add_parser("compact", help="fold an index's change log into its snapshot and shorten the log")
    c.add_argument("--index", type=Path, required=True)
    c.add_argument("--no-progress", action="store_true")


def run_update(args: argparse.Namespace) -> int:
    from skbqa.changes.format import change_to_json, read_changes

    batch = read_changes(args.changes)  # every line checked before anything is sent or applied
    if args.server:
        with open_client(args) as client:
            from skbqa.client.calls import checked_idempotency_key

            given = args.idempotency_key
            key = checked_idempotency_key(uuid.uuid4().hex if given is None else given)  # "" is refused
            # before the call: a call that fails (the server went away after logging the batch) still leaves the
            # user the key to resend with; on stderr, so that --json keeps stdout to the summary
            print(f"idempotency key: {key} (resend with --idempotency-key {key})", file=sys.stderr, flush=True)
            result = client.apply_changes((change_to_json(c) for _, c in batch), idempotency_key=key)
        summary: dict[str, Any] = {
            "version": result.version,
            "changes": len(batch),
            "outcome": result.outcome,
            "idempotency_key": key,
        }
    else:
        refuse_remote_flags(args)
        if args.idempotency_key is not None:
            raise InvalidInputError("--idempotency-key only applies with --server")
        summary = _apply_locally(args.index, batch, args.changes.name, progress=not args.no_progress)
    _print(summary, as_json=args.json)
    return 0


def _apply_locally(index: Path, batch: list[Any], where: str, *, progress: bool) -> dict[str, Any]:
    from skbqa.changes.updater import IndexUpdater

    updater = IndexUpdater(index, progress=progress)
    try:
        version, outcome = updater.submit(batch, where)  # the fold below shows the encoder's progress bar
        report = updater.snapshot()
    finally:
        updater.close()
    summary: dict[str, Any] = {"version": version, "changes": len(batch), "outcome": dict(outcome)}
    if report is not None:
        summary |= {
            "nodes": report.nodes,
            "edges": report.edges,
            "texts_encoded": report.encoded,
            "vectors_reused": report.reused,
            "seconds": report.seconds,
        }
    return summary


def run_compact(args: argparse.Namespace) -> int:
    from skbqa.changes.updater import IndexUpdater

    updater = IndexUpdater(args.index, progress=not args.no_progress)
    try:
        report, dropped = updater.compact()
        version = updater.snapshot_version
    finally:
        updater.close()
    folded = f"folded the pending changes in {report.seconds['snapshot_total']:.1f} s; " if report else ""
    print(f"{args.index} at version {version}: {folded}dropped {dropped} batches from the change log")
    return 0


def _print(summary: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    outcome = ", ".join(f"{count} {what}" for what, count in sorted(summary["outcome"].items())) or "nothing"
    print(
        f"applied {summary['changes']} changes: {outcome}; the knowledge base is now at version {summary['version']}"
    )
    if "seconds" in summary:
        encoded = sum(summary["texts_encoded"].values())
        print(
            f"index: {summary['nodes']} nodes, {summary['edges']} edges; {encoded} texts encoded, "
            f"{sum(summary['vectors_reused'].values())} vectors reused; "
            f"{summary['seconds']['snapshot_total']:.1f} s"
        )
