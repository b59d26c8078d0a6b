#!/usr/bin/env python3
"""Compute gold answers for the hand-written Python standard-library held-out questions.

Usage:
    gold_handwritten.py BUNDLE_DIR OUT.jsonl [--questions handwritten.jsonl]

handwritten.jsonl (blind) and dev.jsonl (development) hold questions written by hand, each
with a constraint spec in the shared spec language (../spec_language.py); answers are never
listed by hand but computed here on the bundle's graph.  Every question must resolve its
constants and have 1..30 answers, otherwise the script exits non-zero.  Standard library only.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import spec_language as sl

MIN_ANS, MAX_ANS = 1, 30

if __name__ == "__main__":
    sl.gold_main(
        __doc__,
        sl.KB,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "handwritten.jsonl"),
        MIN_ANS,
        MAX_ANS,
    )
