"""End-to-end profile of ``induce align`` (the default: fertility model, Gibbs, 3 samplers) on Hansards en-fr.

Writes the first N normalised training pairs (as ``align_bench.py``) to two files, then runs the command line in
this process under cProfile, timing every Gibbs sweep by model level, and prints the CPU seconds of each stage of
the pipeline (reading, vocabulary encoding, building the cell arrays, the sampler levels, decoding,
symmetrisation, writing) and the top functions.

    nice -n 10 python benchmarks/align_profile.py --pairs 50000 [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict

from align_bench import enfr_data  # noqa: E402  (benchmarks/ is on the path when run as a script)

#: pipeline stages: (label, module file suffix, function name) whose cumulative time is reported
STAGES = [
    ("read + normalise (PairSource.pairs)", "align/aligner.py", "pairs"),
    ("vocabulary encoding (both sides)", "align/aligner.py", "_encode"),
    ("cell arrays + table (per direction)", "align/table.py", "build_table"),
    ("Gibbs training (both directions)", "align/gibbs.py", "train"),
    ("decode from marginals", "align/direction.py", "viterbi"),
    ("symmetrise", "align/symmetrize.py", "symmetrize_corpus"),
    ("links to lists", "align/symmetrize.py", "matrices_to_links"),
    ("write Pharaoh", "corpus/parallel.py", "write_pharaoh"),
]


def _timed_sweeps(times: dict):
    """Wrap ``gibbs_sweep`` so that its CPU seconds add up per model level (argument 18)."""
    from induce.kernels import align_gibbs as G

    sweep = G.gibbs_sweep

    def timed(*args):
        start = time.process_time()
        out = sweep(*args)
        times[("level", args[18], args[21] > 0)] += time.process_time() - start
        return out

    G.gibbs_sweep = timed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=50000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from induce.cli import main as induce_main

    pairs, _, _ = enfr_data(args.pairs)
    times: dict = defaultdict(float)
    _timed_sweeps(times)
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt, out = (os.path.join(tmp, name) for name in ("src", "tgt", "out"))
        for path, side in ((src, 0), (tgt, 1)):
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(" ".join(p[side]) + "\n" for p in pairs)
        # compile every kernel first (numba cache) so that the profile holds no compilation
        induce_main(["align", src, tgt, "-o", out, "--seed", str(args.seed), "--gibbs-passes", "1", "1", "1",
                     "--quiet"])
        times.clear()
        print(f"load average before: {os.getloadavg()}", file=sys.stderr)
        profile = cProfile.Profile(time.process_time)
        cpu = time.process_time()
        profile.runcall(induce_main, ["align", src, tgt, "-o", out, "--seed", str(args.seed), "--quiet"])
        cpu = time.process_time() - cpu
        print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    stats = pstats.Stats(profile)
    print(f"{len(pairs)} pairs: {cpu:.2f} CPU-s end to end, {len(pairs) / cpu:.0f} pairs per CPU-second")
    for label, suffix, name in STAGES:
        cum = sum(v[3] for (path, _, func), v in stats.stats.items() if func == name and path.endswith(suffix))
        print(f"  {label:40} {cum:8.2f} s")
    for (_, level, averaged), secs in sorted(times.items()):
        print(f"  {'  gibbs sweeps, level %d%s' % (level, ' (averaged)' if averaged else ''):40} {secs:8.2f} s")
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
