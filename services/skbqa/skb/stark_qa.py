"""STaRK's QA files (`stark_qa/retrieval/dataset.py`): `stark_qa.csv` and the split index files.

`<root>/<name>/stark_qa/stark_qa.csv` (or `stark_qa_human_generated_eval.csv`) has columns `id`, `query`,
`answer_ids`; the latter is a Python list literal such as "[1, 2]", which STaRK `eval`s and this reader parses
with `ast.literal_eval`. `<root>/<name>/split/{train,val,test}.index` list one query id per line (the split
directory is a sibling of `stark_qa/`).
"""

from __future__ import annotations

import ast
import csv
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skbqa.common.errors import BundleError, InvalidInputError
from skbqa.skb.model import QAItem

QA_CSV = "stark_qa.csv"
SPLITS = ("train", "val", "test")
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def load_stark_qa(
    csv_path: Path | str, split_dir: Path | str | None = None, split: str | None = None
) -> list[QAItem]:
    """STaRK's `stark_qa.csv` → QA items (ids as strings, answers as node indices).

    `csv_path` may also be the `stark_qa/` directory or the dataset's QA root holding it. With `split`, only the
    ids of `<split_dir>/<split>.index` are returned, in that file's order; `split_dir` defaults to the `split/`
    directory beside the CSV or beside its parent directory (STaRK's layout). With only `split_dir`, every item
    listed in one of its train/val/test files gets `meta["split"]`. Extra CSV columns land in `meta`.
    """
    path = _resolve_csv(Path(csv_path))
    items = _read_qa_csv(path)
    if split is None and split_dir is None:
        return list(items.values())
    if split is not None:
        if not _SPLIT_NAME.match(split):
            raise InvalidInputError(f"invalid split name {split!r}", split=split)
        sdir = Path(split_dir) if split_dir is not None else _find_split_dir(path)
        if not sdir.is_dir():
            raise BundleError(str(sdir), None, "split directory not found")
        chosen: list[QAItem] = []
        for _lineno, qid in _read_index(sdir / f"{split}.index", items, path.name):
            item = items[qid]
            item.meta["split"] = split
            chosen.append(item)
        return chosen
    assert split_dir is not None
    sdir = Path(split_dir)
    if not sdir.is_dir():
        raise BundleError(str(sdir), None, "split directory not found")
    seen: dict[str, str] = {}
    for name in SPLITS:
        index = sdir / f"{name}.index"
        if not index.is_file():
            continue
        for lineno, qid in _read_index(index, items, path.name):
            if qid in seen:
                raise BundleError(index.name, lineno, f"query id {qid} is also listed in {seen[qid]}.index")
            seen[qid] = name
            items[qid].meta["split"] = name
    return list(items.values())


def _resolve_csv(path: Path) -> Path:
    if path.is_dir():
        for candidate in (path / QA_CSV, path / "stark_qa" / QA_CSV):
            if candidate.is_file():
                return candidate
        raise BundleError(QA_CSV, None, f"file not found in {path} (also looked in stark_qa/)")
    if not path.is_file():
        raise BundleError(str(path), None, "QA file not found")
    return path


def _find_split_dir(csv_path: Path) -> Path:
    candidates = (csv_path.parent / "split", csv_path.parent.parent / "split")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise BundleError(
        "split", None, f"no split directory found (looked in {', '.join(map(str, candidates))}); pass split_dir"
    )


def _read_qa_csv(path: Path) -> dict[str, QAItem]:
    items: dict[str, QAItem] = {}
    lines: dict[str, int] = {}
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise BundleError(path.name, None, "empty file")
            header = [h.strip() for h in header]
            missing = [c for c in ("id", "query", "answer_ids") if c not in header]
            if missing:
                raise BundleError(path.name, 1, f"missing column(s) {', '.join(missing)} in header {header}")
            col = {c: header.index(c) for c in ("id", "query", "answer_ids")}
            extra = [
                (i, h)
                for i, h in enumerate(header)
                if h and not h.startswith("Unnamed") and h not in ("id", "query", "answer_ids")
            ]
            start = reader.line_num + 1
            for row in reader:
                lineno, start = start, reader.line_num + 1
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise BundleError(path.name, lineno, f"expected {len(header)} fields, got {len(row)}")
                qid_raw = row[col["id"]].strip()
                try:
                    qid = str(int(qid_raw))
                except ValueError:
                    raise BundleError(path.name, lineno, f"'id' must be an integer, got {qid_raw!r}") from None
                if qid in items:
                    raise BundleError(
                        path.name, lineno, f"duplicate query id {qid} (first seen on line {lines[qid]})"
                    )
                query = row[col["query"]]
                if not query.strip():
                    raise BundleError(path.name, lineno, "'query' must be a non-empty string")
                raw_answers = row[col["answer_ids"]]
                answers = _parse_answer_ids(raw_answers)
                if answers is None:
                    raise BundleError(
                        path.name,
                        lineno,
                        f"'answer_ids' must be a list literal of integer node ids, got {raw_answers[:80]!r}",
                    )
                meta: dict[str, Any] = {h: row[i] for i, h in extra if row[i].strip()}
                items[qid] = QAItem(qid, query, answers, meta)
                lines[qid] = lineno
    except csv.Error as exc:
        raise BundleError(path.name, None, f"malformed CSV: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None
    return items


def _parse_answer_ids(raw: str) -> list[int] | None:
    """Safe parse of "[1, 2]" (Python or JSON list literal); None when it is anything else."""
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list | tuple):
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in value):
        return None
    return list(value)


def _read_index(path: Path, items: Mapping[str, QAItem], csv_name: str) -> list[tuple[int, str]]:
    if not path.is_file():
        raise BundleError(path.name, None, f"split file not found in {path.parent}")
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        raw = line.strip()
        if not raw:
            continue
        try:
            qid = str(int(raw))
        except ValueError:
            raise BundleError(path.name, lineno, f"expected an integer query id, got {raw!r}") from None
        if qid not in items:
            raise BundleError(path.name, lineno, f"query id {qid} is not in {csv_name}")
        if qid in seen:
            raise BundleError(path.name, lineno, f"query id {qid} is listed twice")
        seen.add(qid)
        out.append((lineno, qid))
    return out
