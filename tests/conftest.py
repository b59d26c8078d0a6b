from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import HashingEncoder, write_bundle


@pytest.fixture
def tiny_bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "bundle")


@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture(scope="session")
def onnx_encoder():
    """The real default encoder (exported from the offline package once per machine, then cached)."""
    from skbqa.models.local_encoder import load_encoder

    return load_encoder("onnx-int8")
