"""The NLTK adapter, checked with NLTK's own evaluation helpers against induce's metrics."""

from __future__ import annotations

import string

import numpy as np
import pytest
from nltk import Tree
from nltk.parse import DependencyGraph
from nltk.parse.evaluate import DependencyEvaluator
from nltk.tag.api import TaggerI

from induce.corpus.formats import load_corpus
from induce.errors import ConfigError
from induce.eval.dependencies import attachment_scores
from induce.nltk_adapter import NLTKTagger, dependency_graphs, to_dependency_graph
from induce.parsers import DMVParser, PCFGInducer
from induce.taggers import HDPHMMTagger, HMMTagger, TagDictionary


@pytest.fixture(scope="module")
def demo():
    return load_corpus("demo").head(400)


def _gold_sents(corpus, column="xpos"):
    return [list(zip(corpus.words(i), corpus.tag_strings(column, i))) for i in range(corpus.n_sentences)]


def test_tag_dictionary_tagger_scored_by_nltk_accuracy(demo):
    tag_dict = TagDictionary.from_gold(demo, "xpos")
    model = HMMTagger(infer="em", n_iter=3, random_state=0).fit(demo, tag_dict=tag_dict)
    tagger = NLTKTagger(model)
    assert isinstance(tagger, TaggerI)
    gold = _gold_sents(demo)
    # NLTK's TaggerI.accuracy (nltk.metrics.accuracy over the flattened pairs) equals induce's token accuracy
    ours = np.mean(np.asarray(model.tag_vocab_.itos, dtype=object)[model.predict_flat(demo)]
                   == np.asarray(demo.tag_vocabs["xpos"].itos, dtype=object)[demo.tags["xpos"]])
    assert tagger.accuracy(gold) == pytest.approx(ours)
    assert tagger.accuracy(gold) > 0.95  # a complete tag dictionary on the demo grammar leaves little ambiguity
    tagged = tagger.tag_sents([["the", "dog"], [], ["an", "unseen-word", "."]])
    assert [len(s) for s in tagged] == [2, 0, 3]
    assert tagged[0][0][0] == "the" and all(t in tag_dict.tags.itos for s in tagged for _, t in s)
    assert tagger.tag(["the", "dog"]) == tagged[0]


def test_induced_states_are_named_like_the_cli(demo):
    model = HMMTagger(n_states=6, infer="cvi2", n_iter=3, random_state=1).fit(demo)
    tagger = NLTKTagger(model)
    sents = [demo.words(i) for i in range(demo.n_sentences)]
    states = [int(t[1:]) for s in tagger.tag_sents(sents) for _, t in s]
    assert np.array_equal(states, model.predict_flat(demo))
    upper = NLTKTagger(model, lowercase=True).tag([w.upper() for w in sents[0]])
    assert [t for _, t in upper] == [t for _, t in tagger.tag(sents[0])]
    assert [w for w, _ in upper] == [w.upper() for w in sents[0]]


def test_hdp_tagger(demo):
    small = demo.head(100)
    model = HDPHMMTagger(truncation=6, infer="cvi", n_iter=2, random_state=0).fit(small)
    tagged = NLTKTagger(model).tag_sents([small.words(i) for i in range(small.n_sentences)])
    assert [int(t[1:]) for s in tagged for _, t in s] == model.predict_flat(small).tolist()


def test_unfitted_tagger_is_refused():
    with pytest.raises(ConfigError, match="fitted"):
        NLTKTagger(HMMTagger())


def test_dependency_graphs_scored_by_nltk(demo):
    parser = DMVParser(n_iter=3, tag_column="xpos").fit(demo)
    graphs = dependency_graphs(parser, demo, "xpos")
    gold = [to_dependency_graph(demo.words(i), demo.sentences[i].heads) for i in range(demo.n_sentences)]
    assert all(isinstance(g, DependencyGraph) for g in graphs)
    assert graphs[0].nodes[1]["tag"] == demo.tag_strings("xpos", 0)[0]
    _, uas = DependencyEvaluator(graphs, gold).eval()
    # NLTK skips punctuation words; induce's attachment score with the same mask must agree
    words = np.concatenate([demo.words(i) for i in range(demo.n_sentences)])
    keep = np.array([w.strip(string.punctuation) != "" for w in words])
    ours = attachment_scores(parser.predict_flat(demo), demo.heads, demo.offsets, mask=keep)["directed"]
    assert uas == pytest.approx(ours)


def test_to_dependency_graph_by_hand():
    g = to_dependency_graph(["John", "saw", "Mary"], [2, 0, 2], tags=["NNP", "VBD", "NNP"])
    assert g.root["word"] == "saw" and g.root["rel"] == "ROOT"
    assert str(g.tree()) == "(saw John Mary)"
    assert g.nodes[1]["head"] == 2 and g.nodes[3]["tag"] == "NNP"
    spaced = to_dependency_graph(["New York", "is"], [2, 0])  # words with spaces (e.g. UD Vietnamese) survive
    assert spaced.nodes[1]["word"] == "New York"
    with pytest.raises(ConfigError, match="heads must be in"):
        to_dependency_graph(["a", "b"], [0, 3])
    with pytest.raises(ConfigError, match="one head"):
        to_dependency_graph(["a", "b"], [0])


def test_parsers_return_nltk_trees(demo):
    small = demo.head(20)
    trees = PCFGInducer(n_nonterminals=3, n_iter=1, random_state=0).fit(small).parse(small)
    assert len(trees) == 20 and all(isinstance(t, Tree) for t in trees)
    assert trees[0].leaves() == small.words(0)


def test_induced_tagger_needs_a_many_to_one_mapping_for_accuracy(demo):
    """accuracy() of state names against gold tags used to return a silent 0.0 (issue 39)."""
    from induce.eval.tagging import many_to_one

    model = HMMTagger(n_states=8, infer="em", n_iter=5, random_state=0).fit(demo)
    gold = _gold_sents(demo)
    with pytest.raises(ConfigError, match="many_to_one"):
        NLTKTagger(model).accuracy(gold)
    mapped = NLTKTagger(model).many_to_one(gold)
    # mapped on the same sentences it is scored on: the M-1 of induce's metrics
    assert mapped.accuracy(gold) == pytest.approx(many_to_one(model.predict_flat(demo), demo.tags["xpos"]))
    assert set(t for s in mapped.tag_sents([demo.words(0)]) for _, t in s) <= set(demo.tag_vocabs["xpos"].itos)
