"""Installs a test's pinned Node.js packages (`npm ci` from its package-lock.json) once, or skips the test when
Node.js, npm or the registry is not available."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NPM_CI_TIMEOUT_S = 240


def node_with_packages(directory: Path, marker: str, *, suite: str) -> str:
    """The `node` binary, once `directory`'s node_modules holds `marker` (a package path such as "@grpc/grpc-js")."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"{suite}: needs Node.js and npm on PATH ({'node' if node is None else 'npm'} is missing)")
    if not (directory / "node_modules" / marker).is_dir():
        command = [npm, "ci", "--prefix", str(directory), "--no-audit", "--no-fund", "--ignore-scripts"]
        try:
            installed = subprocess.run(command, capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.skip(f"{suite}: `npm ci --prefix {directory}` did not finish within {NPM_CI_TIMEOUT_S} s")
        if installed.returncode != 0:
            tail = (installed.stderr or installed.stdout).strip().splitlines()[-3:]
            pytest.skip(f"{suite}: `npm ci --prefix {directory}` failed: {' | '.join(tail)}")
    return node
