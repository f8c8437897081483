"""``.. induce-figure:: NAME``: a figure drawn at build time by induce's own report code
(:mod:`induce.report.figures`, :mod:`induce.report.drawings`) from a small fit, embedded as inline SVG.

Each NAME is a function below (demo corpus or shared corpora; seeds fixed), so the pictures in the user
guide are the ones ``--report`` draws, from the code as it is.  A figure whose data is absent (the shared
corpora outside this checkout) becomes a one-line note instead.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def find_corpora() -> Path | None:
    """``$INDUCE_CORPORA``, or ``../shared/corpora`` beside the checkout (as tests/conftest.py looks), or ``None``."""
    from induce.corpus.registry import default_corpora_dir

    for cand in (default_corpora_dir(), Path(__file__).resolve().parents[3] / "shared" / "corpora"):
        if cand is not None and cand.is_dir():
            return cand
    return None


@functools.cache
def _demo_tagger():
    from induce import HMMTagger, load_corpus

    corpus = load_corpus("demo")
    return corpus, HMMTagger(n_states=16, random_state=0).fit(corpus)


def tagging_curves() -> str:
    from induce.report.document import trace_lines
    from induce.report.figures import curves_svg

    _, tagger = _demo_tagger()
    panels = {k: v for k, v in trace_lines(tagger.trace_).items() if any(len(x) > 1 for x, _ in v.values())}
    return curves_svg(panels, "iteration")


def tagging_confusion() -> str:
    from induce.report.figures import heatmap_svg
    from induce.report.payloads import confusion_data

    corpus, tagger = _demo_tagger()
    data = confusion_data(tagger.labels_, corpus.tags["xpos"], [f"S{k}" for k in range(tagger.n_states)],
                          corpus.tag_vocabs["xpos"].itos)
    return heatmap_svg(data["counts"], data["states"], data["tags"], data["mapping"])


def dmv_arcs() -> str:
    from induce import DMVParser, load_corpus
    from induce.report.drawings import dependency_svg

    corpus = load_corpus("demo")
    heads = DMVParser(tag_column="xpos", random_state=0).fit(corpus).parse(corpus)
    i = next(i for i, n in enumerate(corpus.lengths) if 7 <= n <= 9)
    gold = corpus.heads[corpus.offsets[i]:corpus.offsets[i + 1]]
    return dependency_svg(corpus.words(i), heads[i], gold.tolist())


def compare_bars() -> str:
    from induce import load_corpus
    from induce.compare import compare
    from induce.report.figures import bars_svg

    result = compare(load_corpus("demo"), ["em", "vi", "cvi2"], seeds=2, gold_column="xpos", n_states=16,
                     n_iter=100, eval_every=100)
    names = list(result["summary"])
    return bars_svg(names, [result["summary"][a]["m1"]["mean"] for a in names],
                    "many-to-one accuracy, demo corpus, 2 seeds, 100 passes", "algorithm", "M-1")


def nile_states() -> str | None:
    from induce.report.figures import series_svg
    from induce.series import HMMSegmenter, read_series

    corpora = find_corpora()
    if corpora is None:
        return None
    table = read_series(corpora / "timeseries" / "nile.csv", columns=["value"])
    states = HMMSegmenter(n_states=2, random_state=0).fit(table.sequences).predict(table.sequences)[0]
    return series_svg(table.sequences[0], states, ["Nile flow"])


def alignment_grid() -> str | None:
    from induce import WordAligner
    from induce.corpus import read_alignments, read_parallel
    from induce.report.drawings import alignment_svg

    corpora = find_corpora()
    if corpora is None:
        return None
    folder = corpora / "align" / "de-en"
    pairs = list(read_parallel(folder / "test.de", folder / "test.en"))
    links = WordAligner(model="hmm", infer="cvi").fit(pairs).align(pairs)
    gold = read_alignments(folder / "de-en.wa", format="pharaoh")
    i = next(i for i, (s, t) in enumerate(pairs) if 6 <= len(s) <= 12 and 6 <= len(t) <= 12)
    return alignment_svg(pairs[i][0], pairs[i][1], links[i], gold[i].sure, gold[i].possible)


FIGURES = {"tagging-curves": tagging_curves, "tagging-confusion": tagging_confusion, "dmv-arcs": dmv_arcs,
           "compare-bars": compare_bars, "nile-states": nile_states, "alignment-grid": alignment_grid}


class InduceFigure(SphinxDirective):
    required_arguments = 1
    has_content = True           # the caption

    def run(self):
        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"unknown induce-figure {name!r}; known: {', '.join(FIGURES)}")
        with warnings.catch_warnings():      # a fit's convergence notes are not the page's business
            warnings.simplefilter("ignore")
            svg = FIGURES[name]()
        if svg is None:
            return [nodes.paragraph(text=f"(Figure {name!r} not drawn: the shared corpora are absent.)")]
        figure = nodes.container(classes=["induce-figure"])
        figure += nodes.raw("", svg, format="html")
        if self.content:
            caption = nodes.paragraph(classes=["caption"])
            caption += self.parse_text_to_nodes("\n".join(self.content))
            figure += caption
        return [figure]


def setup(app):
    app.add_directive("induce-figure", InduceFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
