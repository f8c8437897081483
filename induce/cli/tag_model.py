"""The estimator ``induce tag``'s options describe (:class:`induce.HMMTagger` or :class:`induce.HDPHMMTagger`,
unset options keeping the API's defaults) and the summary of what its fit did."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .common import default_n_states, show_progress
from .vector_options import vector_params


def fixed_hyper(args: argparse.Namespace) -> bool | tuple[str, ...]:
    """``HDPHMMTagger.fix_hyper`` from ``--fix-hyper`` (all) and ``--fix NAME`` (those named)."""
    if args.fix_hyper:
        return True
    return tuple(args.fix) if args.fix else False


def stochastic_options(args) -> dict:
    held = {k: v for k, v in (("heldout_fraction", args.heldout), ("heldout_max_tokens", args.heldout_max_tokens),
                              ("sync_every", args.sync_every),
                              ("staleness", args.staleness)) if v is not None}  # else the model's defaults
    return dict(batch_size=args.batch_size, tau=args.tau, kappa=args.kappa, n_epochs=args.epochs, **held,
                max_batches=args.max_batches, subseq_length=args.subseq_length, buffer=args.buffer,
                heldout_every=args.heldout_every, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                checkpoint_minutes=args.checkpoint_minutes, resume=args.resume)


def new_model(args, hdp: bool, corpus, gold_column, tag_dict):
    """The unfitted HMMTagger or HDPHMMTagger the options describe (unset options keep the API's defaults)."""
    from ..taggers import HDPHMMTagger, HMMTagger

    common = dict(infer=args.infer, decode=args.decode, order=args.order, random_state=args.seed,
                  verbose=show_progress(args), eval_column=gold_column if args.eval_every > 0 else None,
                  eval_every=max(1, args.eval_every))
    given = {"n_iter": args.iterations} if args.iterations is not None else {}
    if hdp:
        if "truncation" not in getattr(args, "_given", {}):
            print(f"induce tag: truncation K = {args.truncation} (the HDP-HMM learns how many states it uses; "
                  "--truncation sets K)", file=sys.stderr)
        return HDPHMMTagger(
            truncation=args.truncation, gamma=args.gamma, sigma=args.sigma, fix_hyper=fixed_hyper(args),
            emission_prior=args.emission_prior, emission_concentration=args.emission_concentration,
            new_word_mass=args.new_word_mass, hyper_burn_in=args.hyper_burn_in, qc=args.qc,
            qc_samples=args.qc_samples, table_estimate=args.table_estimate, table_samples=args.table_samples,
            n_init=args.n_init, merge_moves=args.merge_moves, batch_size=args.batch_size, tau=args.tau,
            kappa=args.kappa, client=args.client, tol=args.tol,
            **common, **given, **({"beta": args.beta} if args.beta is not None else {}))
    n_states = len(tag_dict.tags) if tag_dict is not None else default_n_states(corpus, gold_column, args.states)
    learn_hyper = {"all": True, "per-state": "per-state", "none": False}.get(args.learn_hyper)  # None: the default
    features = {} if args.emission != "features" else dict(
        emission=args.emission, features=args.features, feature_l2=args.feature_l2,
        **({"feature_fit": args.feature_fit} if args.feature_fit else {}))
    return HMMTagger(n_states=n_states, tol=args.tol, alpha=args.alpha, beta=args.beta,
                     learn_hyper=learn_hyper, map_estimate=args.map, cgs_keep=args.cgs_keep,
                     cvi2_block=args.block_size, client=args.client, **common, **stochastic_options(args), **given,
                     **vector_params(args), **features)


def summary(args, hdp: bool, model, corpus, seconds: float) -> dict:
    """What the run did: settings actually used, passes, convergence, time, the final objective."""
    from ..taggers.hmm import STOCHASTIC_ALGORITHMS

    result = {
        "input": str(args.input), "infer": args.infer, "states": model.n_states_, "iterations": model.n_iter_,
        "converged": getattr(model, "converged_", False), "seed": args.seed, "sentences": corpus.n_sentences,
        "tokens": corpus.n_tokens, "seconds": round(seconds, 3),
        "tokens_per_s": round(corpus.n_tokens * model.n_iter_ / seconds, 1) if seconds > 0 else None,
    }
    last = model.trace_[-1]
    if hdp:
        result.update(model_type=args.model, alpha=None, truncation=args.truncation,
                      effective_states=model.effective_states_, gamma=model.gamma_, sigma=model.sigma_,
                      merge_moves=model.merge_moves)
        if len(model.init_objectives_) > 1:
            result["init_objectives"] = [round(x, 3) for x in model.init_objectives_]
    else:
        result.update(alpha=model.alpha_, beta=np.asarray(model.beta_).tolist(),
                      learned=[name for name in ("alpha", "beta") if name in model.learned_hyper_])
        if model.emission == "features":
            result.update(emission="features", feature_fit=model.feature_fit, feature_l2=model._feature_l2(),
                          features=model.feature_spec_, n_features=len(model.feature_names_),
                          top_features={f"S{k}": top for k, top in enumerate(model.top_features())})
    if args.emission == "embeddings":
        result.update(model.embedding_summary())
    if not hdp and args.infer in STOCHASTIC_ALGORITHMS and args.emission != "embeddings":
        result.update({"epochs": result.pop("iterations"), "minibatches": model.n_batches_,
                       "heldout_tokens": model.heldout_tokens_, "tokens_seen": last["tokens_seen"],
                       "tokens_per_s": round(last["tokens_seen"] / last["seconds"], 1) if last["seconds"] > 0 else None})
        for key in ("heldout_log_likelihood_per_token", "minibatch_log_likelihood_per_token"):
            if key in last:
                result[key] = last[key]
    else:
        objective = next(k for k in last if k not in ("iteration", "seconds", "tokens_per_s", "temperature",
                                                      "alpha", "beta"))
        result[objective] = last[objective]
    return result
