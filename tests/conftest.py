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


SAMPLE_BUNDLE = Path(__file__).resolve().parent.parent / "data" / "biomed-sample"


@pytest.fixture(scope="session")
def biomed_sample_engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder):
    """The bundled real sample (3,043 nodes) ingested once per session with the default encoder (~35 s)."""
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.ingest.builder import ingest

    index = tmp_path_factory.mktemp("biomed-sample") / "index"
    ingest(SAMPLE_BUNDLE, index, onnx_encoder, progress=False)
    return EmbeddedEngine.open(index, encoder=onnx_encoder)
