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

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_questions as g
import spec_language as sl

if __name__ == "__main__":
    sl.gold_main(
        __doc__,
        g.KB,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "handwritten.jsonl"),
        g.MIN_ANS,
        g.MAX_ANS,
    )
