"""`skbqa train-grape --index DIR`: train GRAPE's scorer and judge on a synthetic SKB, save them in the index.

Only INDEX_DIR/grape/ is written (models.npz and manifest.json); the index itself is read, never changed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError


def add_train_grape_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "train-grape",
        help="train the GRAPE scorer and completeness judge on synthetic questions; saves them in INDEX/grape/",
    )
    p.add_argument("--index", type=Path, required=True, help="index that will use the models (read-only)")
    p.add_argument("--synth-nodes", type=int, default=3000, help="nodes of the synthetic training SKB")
    p.add_argument("--questions", type=int, default=400, help="synthetic questions to mine training pairs from")
    p.add_argument("--walks", type=int, default=300, help="random-walk pseudo-questions (1–3 hops) added")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the saved manifest as JSON")
    return p


def run_train_grape(args: argparse.Namespace) -> int:
    from skbqa.strategies.grape.training import TrainSettings, train_grape

    if args.synth_nodes < 100:
        raise InvalidInputError("--synth-nodes must be at least 100")
    if args.questions < 1 or args.walks < 0:
        raise InvalidInputError("--questions must be at least 1 and --walks at least 0")
    settings = TrainSettings(
        synth_nodes=args.synth_nodes, questions=args.questions, walks=args.walks, seed=args.seed
    )
    manifest = train_grape(args.index, settings, progress=not args.json)
    if args.json:
        print(json.dumps(manifest, indent=2))
        return 0
    pairs, held = manifest["heldout_pairs"], manifest["heldout_questions"]
    print(
        f"trained GRAPE in {manifest['seconds']['total']:.0f} s on {pairs['pairs_train']} pairs "
        f"({manifest['mining']['questions']} synthetic questions + {manifest['mining']['walks_used']} walks); "
        f"held-out pairs: judge accuracy {pairs.get('judge_accuracy', float('nan')):.3f}, "
        f"scorer AUC {pairs.get('scorer_auc', float('nan')):.3f}; held-out questions ({held['questions']}): "
        f"hit@1 {held['grape_no_fill']['hit@1']:.1f} (af {held['af']['hit@1']:.1f}); "
        f"saved in {Path(args.index) / 'grape'}"
    )
    return 0
