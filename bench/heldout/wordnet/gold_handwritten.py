#!/usr/bin/env python3
"""Compute gold answers for the hand-written WordNet held-out questions.

Usage:
    gold_handwritten.py BUNDLE_DIR OUT.jsonl [--questions handwritten.jsonl]

handwritten.jsonl holds questions written by hand, each with a constraint spec in the
language of gen_questions.eval_spec (constants name their WordNet id, so senses that share
a name are told apart).  Answers are never listed by hand; they are computed here on the
bundle's graph.  Every question must resolve its constants and have 2..20 answers,
otherwise the script exits non-zero.  Output lines have the qa format
{"id", "question", "answers", "target_type", "meta": {"family", "style", "spec", "n_answers"}}.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_questions as g
import spec_language as sl

MIN_HW, MAX_HW = 2, 20

if __name__ == "__main__":
    sl.gold_main(
        __doc__,
        g.KB,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "handwritten.jsonl"),
        MIN_HW,
        MAX_HW,
    )
