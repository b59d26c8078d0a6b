"""`skbqa` command line: ingest, update, compact, ask, eval, demo, synth, build-sage, train-grape, serve, stack
(ARCHITECTURE.md).

Errors print one line, `skbqa: error: ...`, and exit with status 2 for bad usage or input, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from skbqa.cli.backends import add_backend_parsers, add_topics_parser, run_load_milvus, run_load_nebula, run_topics
from skbqa.cli.eval_report import print_eval
from skbqa.cli.grape import add_train_grape_parser, run_train_grape
from skbqa.cli.index_store import add_index_store_parser, run_index_store
from skbqa.cli.remote import add_target_arguments, open_client, refuse_remote_flags
from skbqa.cli.sage import add_build_sage_parser, run_build_sage
from skbqa.cli.serve import add_serve_parser, run_serve
from skbqa.cli.stack import add_stack_parser, run_stack
from skbqa.cli.update import add_update_parsers, run_compact, run_update
from skbqa.common.errors import BundleError, IndexStoreError, InvalidInputError, SkbqaError
from skbqa.engine.embedded import DEFAULT_STRATEGY
from skbqa.engine.embedded import STRATEGY_NAMES as STRATEGIES
from skbqa.engine.explain_text import print_explanation, print_item_evidence
from skbqa.eval.specs import parse_options, parse_spec, split_specs

logger = logging.getLogger("skbqa")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skbqa", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="build an embedded index from an SKB bundle or STaRK directory")
    p.add_argument("bundle", type=Path)
    p.add_argument("--index", type=Path, required=True, help="index directory to (re)build atomically")
    p.add_argument("--encoder", default="onnx-int8", choices=("onnx-int8", "onnx", "torch"))
    p.add_argument("--max-length", type=int, default=128, help="encoder token cap")
    p.add_argument("--vector-dtype", default="float32", choices=("float32", "float16"))
    p.add_argument("--force", action="store_true", help="replace an index built with another encoder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--precomputed-vectors",
        type=Path,
        nargs="?",
        const=Path(),
        default=None,
        metavar="DIR",
        help="take the vectors saved with the bundle (skbqa synth --vectors; DIR defaults to BUNDLE/vectors) "
        "instead of encoding; questions are then embedded by the encoder saved with them",
    )
    p.add_argument(
        "--ann",
        default="auto",
        choices=("auto", "always", "never"),
        help="approximate (faiss IVF) vector index: auto = for sets of 200k vectors or more",
    )

    p = sub.add_parser("ask", help="answer one question (in this process, or by a server with --server)")
    add_target_arguments(p)
    p.add_argument("question")
    p.add_argument("--strategy", default=DEFAULT_STRATEGY, choices=STRATEGIES)
    p.add_argument("--k", type=int, default=20)
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="per-request strategy setting, repeatable (af: alpha, l_max, strict, steps, reranker, parser, k)",
    )
    p.add_argument(
        "--llm",
        action="store_true",
        help="use the OpenAI-compatible LLM set by SKBQA_LLM_URL / SKBQA_LLM_MODEL (docs/llm.md) for parsing "
        "and the LLM rerankers",
    )
    p.add_argument("--json", action="store_true", help="print the full answer as JSON")
    p.add_argument(
        "--explain", action="store_true", help="print the parsed query, every score and the evidence per answer"
    )

    p = sub.add_parser("eval", help="STaRK metrics and latency over a QA file (in this process, or of a server)")
    add_target_arguments(p)
    p.add_argument("--qa", type=Path, required=True)
    p.add_argument(
        "--strategy",
        default="hybrid",
        help="one strategy spec, or several separated by commas: the first is the baseline for ratios; a spec "
        "may carry options, e.g. 'bm25,af[steps=1+7],af[steps=1-7]'",
    )
    p.add_argument("--split", default=None, help="with a STaRK stark_qa.csv: train, val or test")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--depth", type=int, default=100, help="ranked-list length scored (MRR looks this deep)")
    p.add_argument(
        "--llm",
        action="store_true",
        help="use the OpenAI-compatible LLM set by SKBQA_LLM_URL / SKBQA_LLM_MODEL (docs/llm.md) for parsing "
        "and the LLM rerankers",
    )
    p.add_argument("--json", type=Path, default=None, dest="json_out", help="write the report to this file")
    p.add_argument(
        "--per-question",
        type=Path,
        default=None,
        metavar="OUT.jsonl",
        help="write one line per question and strategy: the parse, the evidence, the rank of the first correct answer",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="N",
        help="with --server: questions in flight at once (latency is then measured under that load)",
    )

    p = sub.add_parser("demo", help="ingest a bundle if needed, answer its questions and show why")
    p.add_argument("--bundle", type=Path, default=Path("data/biomed-sample"))
    p.add_argument("--index", type=Path, default=Path(".skbqa/biomed-sample"))
    p.add_argument("--qa-file", default="qa.jsonl", help="QA file inside the bundle")
    p.add_argument("--strategy", default=DEFAULT_STRATEGY, choices=STRATEGIES)
    p.add_argument("--questions", type=int, default=5, help="how many questions to show in detail")

    p = sub.add_parser("synth", help="generate a synthetic STaRK-like SKB bundle with QA")
    p.add_argument("out", type=Path)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--questions", type=int, default=200)
    p.add_argument(
        "--avg-degree", type=float, default=20.0, help="mean edges per node, in + out (edges ≈ N × d / 2)"
    )
    p.add_argument(
        "--vectors",
        action="store_true",
        help="also save precomputed vectors (static encoder distilled from MiniLM) for ingest --precomputed-vectors",
    )

    add_build_sage_parser(sub)
    add_train_grape_parser(sub)
    add_serve_parser(sub)
    add_stack_parser(sub)
    add_backend_parsers(sub)
    add_index_store_parser(sub)
    add_topics_parser(sub)
    add_update_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        commands = {
            "ingest": _ingest,
            "ask": _ask,
            "eval": _eval,
            "demo": _demo,
            "synth": _synth,
            "build-sage": run_build_sage,
            "train-grape": run_train_grape,
            "serve": run_serve,
            "stack": run_stack,
            "load-milvus": run_load_milvus,
            "load-nebula": run_load_nebula,
            "index": run_index_store,
            "topics": run_topics,
            "update": run_update,
            "compact": run_compact,
        }
        return commands[args.command](args)
    except (InvalidInputError, BundleError) as exc:
        print(f"skbqa: error: {exc}", file=sys.stderr)
        return 2
    except SkbqaError as exc:
        print(f"skbqa: error: {exc}", file=sys.stderr)
        return 2 if getattr(exc, "bad_input", False) else 1  # a server's INVALID_ARGUMENT is bad input too
    except KeyboardInterrupt:
        print("skbqa: interrupted", file=sys.stderr)
        return 130


def run() -> None:
    """The `skbqa` command (the console script and `python -m skbqa`): `main`, then exit with its status. A server
    that failed to start may already run threads that are no daemons (gRPC's, Ray's, a Kafka client's), which would
    keep the process alive and never serving: it ends at once instead, so whatever supervises it (the local stack,
    Kubernetes) sees the failure and restarts it."""
    argv = sys.argv[1:]
    status = main(argv)
    if status != 0 and _parser().parse_args(argv).command == "serve":
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(status)
    sys.exit(status)


def _ingest(args: argparse.Namespace) -> int:
    from skbqa.changes.log import ChangeLog
    from skbqa.ingest.builder import ingest
    from skbqa.ingest.precomputed import open_precomputed
    from skbqa.models.local_encoder import load_encoder

    precomputed = None
    if args.precomputed_vectors is not None:
        precomputed = open_precomputed(args.precomputed_vectors if args.precomputed_vectors.parts else args.bundle)
        encoder = precomputed.encoder
    else:
        encoder = load_encoder(args.encoder, max_length=args.max_length)
    try:
        logged = ChangeLog(args.index).last_version()  # batches not yet folded into the index's snapshot
    except IndexStoreError:
        logged = 0  # a damaged log is replaced with the rest of the index
    report = ingest(
        args.bundle,
        args.index,
        encoder,
        vector_dtype=args.vector_dtype,
        force=args.force,
        progress=not args.no_progress,
        precomputed=precomputed,
        ann=args.ann,
    )
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items())
    print(
        f"indexed {report.nodes} nodes and {report.edges} edges into {report.directory} ({stages}); "
        f"encoded {report.texts_encoded} texts at {report.encode_rate:.0f}/s; peak RSS {report.peak_rss_mib:.0f} MiB"
    )
    if replaced := max(report.replaced_version, logged):
        print(
            f"replaced an index at KB version {replaced}: the changes applied to it since its ingest "
            "are not in the new one unless the bundle has them"
        )
    return 0


def _ask(args: argparse.Namespace) -> int:
    options = parse_options(args.option)
    if args.server:
        if args.llm:
            raise InvalidInputError("--llm is the server's setting (skbqa serve --llm), not the client's")
        with open_client(args) as client:
            result = client.ask(args.question, strategy=args.strategy, k=args.k, options=options)
        took = (
            f"{result.client_ms:.0f} ms at the client, {result.timings_ms.get('total', 0.0):.0f} ms at the server"
        )
    else:
        from skbqa.engine.embedded import EmbeddedEngine

        refuse_remote_flags(args)
        engine = EmbeddedEngine.open(args.index, chat=_chat(args))
        result = engine.ask(args.question, strategy=args.strategy, k=args.k, options=options)
        took = f"{result.timings_ms['total']:.0f} ms"
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(f"Q: {result.question}   [{result.strategy}, {took}]")
    if args.explain:
        print_explanation(result)
    for item in result.items:
        print(f"{item.rank:>3}. {item.name}  ({item.type}, id {item.node_id})  score {item.score:.3f}")
        print(f"       why: {item.why}")
        if args.explain:
            print_item_evidence(item)
    return 0


def _chat(args: argparse.Namespace) -> Any:
    """The ChatModel of `--llm` (settings from the environment; a missing variable is a one-line error)."""
    if not args.llm:
        return None
    from skbqa.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_env()


def _eval(args: argparse.Namespace) -> int:
    from skbqa.eval.runner import compare, evaluate_strategy
    from skbqa.skb.qa import load_qa

    strategies = split_specs(args.strategy)
    unknown = [s for s in strategies if parse_spec(s)[0] not in STRATEGIES]
    if not strategies or unknown:
        raise InvalidInputError(
            f"unknown strategy {unknown or args.strategy!r}; choose from {', '.join(STRATEGIES)}"
        )
    if args.limit is not None and args.limit < 1:
        raise InvalidInputError("--limit must be at least 1")
    if args.concurrency < 1:
        raise InvalidInputError("--concurrency must be at least 1")
    items = load_qa(args.qa, split=args.split)[: args.limit]
    with contextlib.ExitStack() as stack:
        answerer = _answerer(args, stack)
        answerer.warm(*(parse_spec(s)[0] for s in strategies))  # first-use work stays out of the latency figures
        on_question = None
        if args.per_question:
            args.per_question.parent.mkdir(parents=True, exist_ok=True)
            out = stack.enter_context(args.per_question.open("w"))
            on_question = lambda record: out.write(json.dumps(record, default=str) + "\n")  # noqa: E731
        reports = [
            evaluate_strategy(
                answerer,
                items,
                s,
                depth=args.depth,
                progress=sys.stderr.isatty(),
                on_question=on_question,
                concurrency=args.concurrency,
            )
            for s in strategies
        ]
    summary = compare(reports)
    print_eval(summary)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(summary, indent=2))
    return 0


def _answerer(args: argparse.Namespace, stack: contextlib.ExitStack[Any]) -> Any:
    """Who answers `skbqa eval`: a server through the client SDK (--server), else the engine in this process."""
    from skbqa.eval.answerers import EngineAnswerer, ServerAnswerer

    if args.server:
        if args.llm:
            raise InvalidInputError("--llm is the server's setting (skbqa serve --llm), not the client's")
        return ServerAnswerer(stack.enter_context(open_client(args)))
    refuse_remote_flags(args)
    if args.concurrency > 1:
        raise InvalidInputError("--concurrency applies with --server (the engine here answers one at a time)")
    from skbqa.engine.embedded import EmbeddedEngine

    return EngineAnswerer(EmbeddedEngine.open(args.index, chat=_chat(args)))


def _demo(args: argparse.Namespace) -> int:
    from skbqa.cli.demo import run_demo

    run_demo(args.bundle, args.index, qa_file=args.qa_file, strategy=args.strategy, questions=args.questions)
    return 0


def _synth(args: argparse.Namespace) -> int:
    from skbqa.synth.generator import generate

    try:
        stats = generate(
            args.out,
            nodes=args.nodes,
            seed=args.seed,
            questions=args.questions,
            edges_per_node=args.avg_degree,
            progress=True,
        )
    except ValueError as exc:  # the generator's argument checks
        raise InvalidInputError(str(exc)) from None
    print(
        f"wrote {args.out}: {stats.nodes} nodes, {stats.edges} edges, {stats.questions} questions "
        f"in {stats.seconds:.1f} s"
    )
    if args.vectors:
        from skbqa.ingest.precomputed import write_precomputed

        manifest = write_precomputed(args.out, seed=args.seed, progress=True)
        print(
            f"wrote {args.out}/vectors: 3 × {manifest['rows']} float16 vectors ({manifest['encoder']['name']}) in "
            f"{manifest['seconds']['total']:.1f} s, {manifest['encoder_texts_per_second']:.0f} texts/s"
        )
    return 0


if __name__ == "__main__":
    run()
