"""What ``induce tag`` reads and writes around a fit: the input corpus and tag dictionary, the scores against the
gold tags, the tagged corpus, the trace, the report, the model file and the printed results."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..atomic import atomic_write
from ..distributed import cluster
from ..errors import ConfigError
from .common import dump_json, emit
from .eval_cmd import halvable


def read_corpus(args: argparse.Namespace):
    """The input corpus (``--heldout`` sentences are split off by the model, which still tags them)."""
    from ..corpus.formats import load_corpus

    corpus = load_corpus(args.input, args.format, encoding=args.encoding, lowercase=args.lowercase,
                         unk_threshold=args.unk_threshold)
    if corpus.n_tokens == 0:
        raise ConfigError(f"{args.input}: no tokens to tag")
    return corpus


def tag_dictionary(args, corpus, gold_column):
    """The ``--tag-dict`` (from the gold column or a file), or None."""
    from ..taggers import TagDictionary

    if not args.tag_dict:
        return None
    if args.tag_dict == "from-gold":
        if gold_column is None:
            raise ConfigError("--tag-dict from-gold needs gold tags in the input (see --gold-column)")
        return TagDictionary.from_gold(corpus, gold_column, cutoff=args.tag_dict_cutoff)
    return TagDictionary.from_file(args.tag_dict, corpus.vocab)


def scores(corpus, states, names, gold_column: str, tag_dict) -> dict:
    """The tagging metrics against ``gold_column`` (plus plain accuracy when the states are the dictionary's tags)."""
    from ..eval.tagging import accuracy, tagging_report

    gold = corpus.tags[gold_column]
    halves = corpus.offsets if halvable(corpus.offsets) else None
    report = tagging_report(states, gold, halves)
    # ``states`` is K in every run (also with --stream); the report's distinct predicted states are states_used
    scores = {"gold_column": gold_column, "states_used": report.pop("states")}
    scores.update({k: v for k, v in report.items() if k not in ("tokens",)})
    if halves is None:
        scores["note"] = "cross-validated many-to-one skipped: it needs two halves with tokens (>= 2 sentences)"
    if tag_dict is not None:
        # states are tags: compare names in one shared id space
        both = np.concatenate([names[states], np.asarray(corpus.tag_vocabs[gold_column].itos, dtype=object)[gold]])
        _, ids = np.unique(both.astype(str), return_inverse=True)
        scores["accuracy"] = accuracy(ids[: len(states)], ids[len(states):])
    return scores


def write_output(args, corpus, states, names, tag_dict) -> str:
    """The input with the induced tags added (atomic); returns the path.

    The format is the one ``-o`` names by its extension (``x.conllu``: CoNLL-U with the gold tags kept and
    the induced ones in MISC, whatever the input was), else the input's.  PTB output has no spare column:
    its preterminals become ``GOLD=INDUCED`` (:func:`induce.corpus.writers.write_tagged`).
    """
    from ..corpus.formats import detect_format, format_of_name
    from ..corpus.writers import write_tagged

    if corpus.sentences is None:
        raise ConfigError("the input's sentences were not kept; cannot write the output")
    fmt = format_of_name(args.output) or (args.format if args.format != "auto"
                                          else detect_format(args.input, args.encoding))
    tags = [names[s].tolist() for s in corpus.split(states)]
    column = args.output_column or ("induced" if fmt == "conllu" and tag_dict is None else None)
    write_tagged(args.output, corpus.sentences, tags, fmt, column)
    return args.output


def write_trace(path: str, trace: list[dict]) -> None:
    """The trace as JSON (a list of records) or CSV (one row per record), atomically."""
    if path.endswith(".csv"):
        import csv

        columns = list(dict.fromkeys(k for rec in trace for k in rec))
        with atomic_write(path) as out:
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            writer.writerows(trace)
    else:
        with atomic_write(path) as out:
            dump_json(trace, out, indent=1)


def outputs(model, args, result: dict) -> int:
    """Save the model, write the trace and the JSON file, print the results."""
    if hasattr(model, "batch_size_"):  # a minibatch fit: the size it used
        result["batch_size"] = model.batch_size_
    if args.client is not None:
        result["workers"] = cluster.n_workers(args.client)
        if result.get("tokens_per_s"):
            result["tokens_per_s_per_worker"] = round(result["tokens_per_s"] / result["workers"], 1)
        if hasattr(model, "cluster_meter_"):  # step overhead, per-worker throughput and peak memory
            result.update(model.cluster_meter_.report(result["workers"]))
    if args.save:
        model.save(args.save)
        result["model"] = args.save
    if args.trace:
        write_trace(args.trace, model.trace_)
        result["trace"] = args.trace
    if args.json and args.json != "-":
        with atomic_write(args.json) as out:
            dump_json(result | {"trace": model.trace_}, out, indent=2)
    emit(result, args.json == "-")
    return 0


def finish(args, model, corpus, result: dict, states, names, gold_column, tag_dict) -> int:
    """:func:`deliver`, then the summary and model file."""
    deliver(args, model, corpus, result, states, names, gold_column, tag_dict)
    return outputs(model, args, result)


def deliver(args, model, corpus, result: dict, states, names, gold_column, tag_dict) -> None:
    """The scores against the gold column (into ``result``), the tagged output and the report of a tagged
    corpus, trained or loaded."""
    if gold_column is not None:
        result.update(scores(corpus, states, names, gold_column, tag_dict))
    if args.output:
        result["output"] = write_output(args, corpus, states, names, tag_dict)
    if args.report:
        from ..report import tagging_data, write_report

        write_report(args.report, {"command": "tag", **result, "trace": model.trace_,
                                   **tagging_data(corpus, states, names, gold_column)})


def interrupted(model, args) -> int:
    print(f"induce tag: interrupted after {model.n_batches_} minibatches; checkpoint written to {args.checkpoint}; "
          f"rerun with --resume to continue", file=sys.stderr)
    if args.trace:
        write_trace(args.trace, model.trace_)
    return 130
