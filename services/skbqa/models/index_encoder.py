"""The encoder an index was built with, rebuilt for querying: a local model by name, or the static encoder
(`models.static_encoder`), which is data and is therefore stored inside the index directory."""

from __future__ import annotations

from pathlib import Path

from skbqa.common.errors import ModelError
from skbqa.models.static_encoder import StaticEncoder
from skbqa.query.encoder import Encoder

STATIC_FILE = Path("encoder") / "static.npz"
STATIC_PREFIX = "static-"


def save_index_encoder(encoder: Encoder, directory: Path) -> None:
    """Store the encoder in the index when it cannot be rebuilt from its name alone."""
    if isinstance(encoder, StaticEncoder):
        encoder.save(directory / STATIC_FILE)


def encoder_for_index(directory: Path, name: str, *, threads: int | None = None) -> Encoder:
    """The encoder named by an index manifest (`encoder.name`)."""
    if name.startswith(STATIC_PREFIX):
        encoder = StaticEncoder.load(Path(directory) / STATIC_FILE)
        if encoder.name != name:
            raise ModelError(f"{directory}: stored static encoder is {encoder.name!r}, the manifest says {name!r}")
        return encoder
    from skbqa.models.local_encoder import encoder_from_name

    encoder_local: Encoder = encoder_from_name(name, threads=threads)
    return encoder_local
