"""Reads STaRK's pickles (`node_info.pkl`, the type dicts) with an allow-list, since pickles are untrusted input.

`pickle.load` on a crafted file runs arbitrary code, so the `Unpickler` here resolves only built-in
containers/scalars (set, frozenset, bytearray, complex), `_codecs.encode` with latin-1 (how protocol ≤ 2
stores bytes) and numpy scalar / ndarray (incl. protocol 5's `_frombuffer`) / dtype reconstruction: STaRK's
dicts hold numpy scalars from pandas rows, and these constructors build data, never call user code. Any other
global is refused with a `BundleError` naming it.
"""

from __future__ import annotations

import codecs
import pickle
from pathlib import Path
from typing import Any

from skbqa.common.errors import BundleError


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only data constructors: built-in containers/scalars and numpy scalars, arrays and dtypes."""

    _ALLOWED = frozenset(
        {
            ("builtins", "set"),
            ("builtins", "frozenset"),
            ("builtins", "bytearray"),
            ("builtins", "complex"),
            ("numpy", "dtype"),
            ("numpy", "ndarray"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.numeric", "_frombuffer"),  # protocol 5 arrays
            ("numpy._core.numeric", "_frombuffer"),
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("_codecs", "encode"):
            return _latin1_encode
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name}")


def _latin1_encode(text: str, encoding: str = "utf-8") -> bytes:
    if encoding.replace("-", "").lower() not in ("latin1", "iso88591"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r}")
    return codecs.encode(text, "latin-1")


def _load_pickle(path: Path) -> Any:
    if not path.is_file():
        raise BundleError(path.name, None, f"file not found in {path.parent}")
    try:
        with path.open("rb") as handle:
            return _RestrictedUnpickler(handle).load()
    except pickle.UnpicklingError as exc:
        raise BundleError(
            path.name,
            None,
            f"refused or malformed pickle ({exc}): only built-in containers/scalars and numpy scalars/arrays "
            "are allowed, since pickles are untrusted input",
        ) from None
    except Exception as exc:
        raise BundleError(path.name, None, f"cannot unpickle: {type(exc).__name__}: {exc}") from None
