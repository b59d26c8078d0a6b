"""QA files: `{"id", "question", "answers": [int, ...]}` per line, extra keys kept as metadata."""

from __future__ import annotations

from pathlib import Path

from skbqa.common.errors import BundleError
from skbqa.skb.jsonl import read_jsonl
from skbqa.skb.model import QAItem


def load_qa(path: Path | str) -> list[QAItem]:
    path = Path(path)
    if not path.is_file():
        raise BundleError(str(path), None, "QA file not found")
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
