"""The generated code in services/skbqa/v1 is what scripts/gen_protos.sh produces from protos/ (no drift)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "gen_protos.sh"), str(out)],
        check=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    generated = sorted(p.relative_to(out / "skbqa" / "v1") for p in (out / "skbqa" / "v1").glob("*.py*"))
    committed = sorted(
        p.relative_to(ROOT / "services" / "skbqa" / "v1") for p in (ROOT / "services/skbqa/v1").glob("*.py*")
    )
    assert generated == committed, "run scripts/gen_protos.sh and commit the result"
    for name in generated:
        fresh = (out / "skbqa" / "v1" / name).read_text()
        current = (ROOT / "services" / "skbqa" / "v1" / name).read_text()
        assert fresh == current, f"{name} is stale: run scripts/gen_protos.sh and commit the result"
