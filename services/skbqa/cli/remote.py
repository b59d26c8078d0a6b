"""`--server HOST:PORT` for `skbqa ask` and `skbqa eval`: the flags that reach a deployed service, and the client
built from them (token and TLS files may come from SKBQA_CLIENT_* instead, see `skbqa.client.options`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    """--index DIR or --server HOST:PORT (exactly one), and the connection flags of --server."""
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--index", type=Path, help="answer in this process from this index directory")
    target.add_argument(
        "--server",
        metavar="HOST:PORT",
        help="ask a deployed service (the gateway or `skbqa serve`) through the client SDK; several replicas as "
        "HOST:PORT,HOST:PORT (balanced round-robin, names resolved by the client; e.g. what `skbqa stack up` "
        "prints for --replicas gateway=2)",
    )
    remote = p.add_argument_group("with --server")
    remote.add_argument(
        "--token-file", type=Path, default=None, help="bearer token, first line (or SKBQA_CLIENT_TOKEN)"
    )
    remote.add_argument("--tls", action="store_true", help="TLS with the system's root certificates")
    remote.add_argument("--tls-ca", type=Path, default=None, help="CA of the server's certificate (TLS)")
    remote.add_argument("--tls-cert", type=Path, default=None, help="client certificate (mutual TLS)")
    remote.add_argument("--tls-key", type=Path, default=None, help="client key (mutual TLS)")
    remote.add_argument("--server-name", default=None, help="the name on the server's certificate, if not HOST")
    remote.add_argument("--deadline", type=float, default=None, help="seconds per question, retries included (30)")
    remote.add_argument("--retries", type=int, default=None, help="extra attempts after UNAVAILABLE (4)")


def open_client(args: argparse.Namespace) -> Any:
    """The SkbqaClient of --server and its flags (a one-line InvalidInputError for bad settings)."""
    try:
        from skbqa.client import SkbqaClient
        from skbqa.client.options import ClientOptions, read_token
    except ImportError as exc:  # grpcio or tenacity missing
        raise InvalidInputError(
            f"--server needs the client extra: pip install 'skbqa[client]' ({exc.name})"
        ) from None
    options = ClientOptions.from_env(
        args.server,
        token=read_token(args.token_file) if args.token_file else None,
        tls=args.tls or None,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        server_name=args.server_name,
        deadline_s=args.deadline,
        retries=args.retries,
    )
    return SkbqaClient(options)


def refuse_remote_flags(args: argparse.Namespace) -> None:
    """Connection flags without --server are a mistake worth saying."""
    given = [
        flag
        for flag, value in (
            ("--token-file", args.token_file),
            ("--tls", args.tls),
            ("--tls-ca", args.tls_ca),
            ("--tls-cert", args.tls_cert),
            ("--tls-key", args.tls_key),
            ("--server-name", args.server_name),
            ("--deadline", args.deadline),
            ("--retries", args.retries),
        )
        if value
    ]
    if given:
        raise InvalidInputError(f"{', '.join(given)} only apply with --server")
