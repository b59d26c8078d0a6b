"""One entry point for every SKB source: the bundle format, or STaRK's native processed files."""

from __future__ import annotations

from pathlib import Path

from skbqa.skb.bundle import load_bundle
from skbqa.skb.model import SKB


def load_skb(path: Path | str) -> SKB:
    path = Path(path)
    if (path / "schema.json").is_file() or not path.is_dir():
        return load_bundle(path)  # also produces the "not found" error for a missing directory
    from skbqa.skb.stark import is_stark_dir, load_stark_skb

    if is_stark_dir(path):
        return load_stark_skb(path)
    return load_bundle(path)  # reports the missing schema.json
