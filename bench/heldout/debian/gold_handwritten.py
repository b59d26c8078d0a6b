#!/usr/bin/env python3
"""Compute gold answers for the hand-written held-out questions.

Usage:
    gold_handwritten.py BUNDLE_DIR OUT.jsonl [--questions handwritten.jsonl]

handwritten.jsonl holds questions written by hand together with a constraint spec (the
same spec language as gen_questions.eval_spec); answers are never listed by hand but
computed here on the bundle's graph.  Every question must resolve its constants and have
1..30 answers, otherwise the script exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_questions as g


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("out")
    ap.add_argument("--questions", default=os.path.join(here, "handwritten.jsonl"))
    a = ap.parse_args()
    kb = g.KB(a.bundle)
    out, errs = [], []
    with open(a.questions, encoding="utf-8") as qf:
        handwritten = [json.loads(line) for line in qf]
    for h in handwritten:
        try:
            ans = g.eval_spec(kb, h["spec"], limit=None)
        except KeyError as e:
            errs.append(f"{h['id']}: constant not in bundle: {e}")
            continue
        if not (g.MIN_ANS <= len(ans) <= g.MAX_ANS):
            errs.append(f"{h['id']}: {len(ans)} answers")
            continue
        out.append(
            {
                "id": h["id"],
                "question": h["question"],
                "answers": sorted(ans),
                "target_type": h["target_type"],
                "meta": {"family": h["family"], "style": "handwritten", "spec": h["spec"], "n_answers": len(ans)},
            }
        )
    errs += g.check_questions(kb, out)
    if errs:
        print("handwritten gold problems:\n  " + "\n  ".join(errs), file=sys.stderr)
        sys.exit(1)
    with open(a.out, "w", encoding="utf-8") as f:
        for q in out:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} handwritten questions with computed gold to {a.out}")


if __name__ == "__main__":
    main()
