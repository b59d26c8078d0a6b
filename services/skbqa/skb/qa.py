"""QA files: `{"id", "question", "answers": [int, ...]}` per line, extra keys kept as metadata."""

from __future__ import annotations

from pathlib import Path

from skbqa.common.errors import BundleError
from skbqa.skb.jsonl import read_jsonl
from skbqa.skb.model import QAItem


def load_qa(path: Path | str, *, split: str | None = None) -> list[QAItem]:
    """A QA `.jsonl[.gz]` file, or STaRK's `stark_qa.csv` (optionally one split of it: train / val / test)."""
    path = Path(path)
    if not path.is_file():
        raise BundleError(str(path), None, "QA file not found")
    if path.suffix == ".csv":
        from skbqa.skb.stark_qa import load_stark_qa

        return load_stark_qa(path, split=split)
    if split is not None:
        raise BundleError(path.name, None, "--split applies to STaRK QA csv files only")
    items: list[QAItem] = []
    for lineno, obj in read_jsonl(path):
        question = obj.get("question")
        answers = obj.get("answers")
        if not isinstance(question, str) or not question.strip():
            raise BundleError(path.name, lineno, "'question' must be a non-empty string")
        if not isinstance(answers, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in answers
        ):
            raise BundleError(path.name, lineno, "'answers' must be a list of integer node ids")
        qid = obj.get("id", f"{path.stem}-{lineno}")
        meta = {k: v for k, v in obj.items() if k not in ("id", "question", "answers")}
        items.append(QAItem(str(qid), question, list(answers), meta))
    return items
