"""The built-in demo corpus: sentences sampled from a small English-like PCFG.

Every command of induce can run on this corpus with no download.  The grammar
:data:`DEMO_GRAMMAR` is a proper PCFG (the probabilities of each left-hand
side's rules sum to one) over internal symbols; each rule's right-hand side
marks its *head* child (``"VP/*"``) and gives every other child the dependency
relation it takes (``"NP/nsubj"``), attached to the head child or, with
``@k``, to the head of sibling ``k`` (UD attaches ``cc`` and the ``punct``
before a conjunct to that conjunct).  A sampled tree therefore carries

* ``tags["xpos"]``: the Penn Treebank tag of each preterminal, and
  ``tags["upos"]``: its UD tag (the lexicon gives both per preterminal);
* ``tree``: an ``nltk.Tree`` with PTB labels (S, NP, VP, PP, ADJP, ADVP, SBAR,
  WHNP) whose preterminals are the xpos tags;
* ``heads``/``deprels``: the dependency tree obtained by head percolation
  through the marked head children (UD content heads: the noun heads a PP and
  its preposition is ``case``, the main verb heads ``MD VP`` with ``aux``).
  The trees are projective by construction: every head is the head of a
  contiguous constituent.

Sampling is top-down from ``TOP``: pick a rule of the current symbol with its
probability, recurse into its children left to right; a preterminal draws a
word from its lexicon.  Words within a tag have Zipf weights ``1/r``.
Sentences longer than ``max_len`` words are rejected and drawn again, so the
output follows the PCFG conditioned on ``length <= max_len`` (rejection is
rare: the expected length is about 9 words).

:func:`demo_tag_hmm` gives the exact tag-bigram and emission statistics the
PCFG induces (untruncated), i.e. the limit of the maximum-likelihood
fully-observed HMM on an infinite demo corpus, for recovery tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from nltk import Tree

from .corpus import Corpus
from .sentence import Sentence


def _zipf(words: str) -> dict[str, float]:
    """Words (space-separated) with Zipf probabilities ``p(w_r) = (1/r) / H_n``."""
    items = words.split()
    weights = 1.0 / np.arange(1, len(items) + 1)
    weights /= weights.sum()
    return {w: float(p) for w, p in zip(items, weights)}


def _lex(xpos: str, upos: str, words: str) -> dict:
    return {"xpos": xpos, "upos": upos, "words": _zipf(words)}


#: The demo PCFG: start symbol, PTB label of each nonterminal, rules
#: ``lhs -> [(probability, (child/relation, ...)), ...]`` and the lexicon
#: ``preterminal -> {xpos, upos, words: {word: probability}}``.
DEMO_GRAMMAR: dict = {
    "start": "TOP",
    "labels": {
        "TOP": "S", "CL": "S", "VP": "VP", "VPB": "VP", "NP": "NP", "PP": "PP",
        "ADVP": "ADVP", "ADJP": "ADJP", "SBAR_R": "SBAR", "WHNP": "WHNP",
        "RCS": "S", "SBAR_C": "SBAR",
    },
    "rules": {
        "TOP": [
            (0.78, ("NP/nsubj", "VP/*", "./punct")),
            (0.10, ("CL/*", ",/punct@3", "CC/cc@3", "CL/conj", "./punct")),
            (0.12, ("ADVP/advmod", ",/punct", "NP/nsubj", "VP/*", "./punct")),
        ],
        "CL": [(1.0, ("NP/nsubj", "VP/*"))],
        "VP": [
            (0.28, ("VBD_T/*", "NP/obj")),
            (0.10, ("VBD_T/*", "NP/obj", "PP/obl")),
            (0.14, ("VBD_I/*",)),
            (0.10, ("VBD_I/*", "PP/obl")),
            (0.06, ("VBD_I/*", "ADVP/advmod")),
            (0.05, ("ADVP/advmod", "VBD_T/*", "NP/obj")),
            (0.08, ("VBD_S/*", "SBAR_C/ccomp")),
            (0.14, ("MD/aux", "VPB/*")),
            (0.05, ("VP/*", "CC/cc@2", "VP/conj")),
        ],
        "VPB": [
            (0.50, ("VB_T/*", "NP/obj")),
            (0.15, ("VB_T/*", "NP/obj", "PP/obl")),
            (0.20, ("VB_I/*",)),
            (0.15, ("VB_I/*", "PP/obl")),
        ],
        "NP": [
            (0.24, ("DT/det", "NN/*")),
            (0.11, ("DT/det", "JJ/amod", "NN/*")),
            (0.03, ("DT/det", "JJ/amod", "JJ/amod", "NN/*")),
            (0.02, ("DT/det", "ADJP/amod", "NN/*")),
            (0.05, ("DT/det", "NNS/*")),
            (0.04, ("JJ/amod", "NNS/*")),
            (0.04, ("NNS/*",)),
            (0.03, ("CD/nummod", "NNS/*")),
            (0.10, ("NNP/*",)),
            (0.03, ("NNP/*", "NNP/flat")),
            (0.10, ("PRP/*",)),
            (0.12, ("NP/*", "PP/nmod")),
            (0.05, ("NP/*", "SBAR_R/acl:relcl")),
            (0.04, ("NP/*", "CC/cc@2", "NP/conj")),
        ],
        "PP": [(1.0, ("IN/case", "NP/*"))],
        "ADVP": [(1.0, ("RB/*",))],
        "ADJP": [(1.0, ("RB_D/advmod", "JJ/*"))],
        "SBAR_R": [(1.0, ("WHNP/nsubj", "RCS/*"))],
        "WHNP": [(1.0, ("WDT/*",))],
        "RCS": [(1.0, ("VP/*",))],
        "SBAR_C": [(1.0, ("IN_C/mark", "CL/*"))],
    },
    "lexicon": {
        "DT": _lex("DT", "DET", "the a this every some no each another"),
        "JJ": _lex(
            "JJ", "ADJ",
            "big small old young red green happy sad quick lazy bright dark tall short heavy "
            "quiet loud clever strange gentle brave angry calm cold warm famous rich poor busy tired",
        ),
        "NN": _lex(
            "NN", "NOUN",
            "dog cat man woman child teacher farmer bird house garden river city car book letter "
            "table window door tree road king queen doctor student horse ship song story key box "
            "friend village forest mountain boat apple",
        ),
        "NNS": _lex(
            "NNS", "NOUN",
            "dogs cats men women children teachers farmers birds houses gardens cars books letters "
            "trees students horses ships songs stories friends apples boats flowers stones",
        ),
        "NNP": _lex(
            "NNP", "PROPN",
            "John Mary Paris London Alice Bob Smith Jones Anna Peter Rome Berlin Tom Sarah Kate "
            "David Emma Oliver Lucy Henry",
        ),
        "PRP": _lex("PRP", "PRON", "he she it they we you I"),
        "CD": _lex("CD", "NUM", "two three four five ten twenty"),
        "VBD_T": _lex(
            "VBD", "VERB",
            "saw chased found liked followed helped visited watched painted carried opened read "
            "wrote built bought sold loved met called taught",
        ),
        "VBD_I": _lex(
            "VBD", "VERB",
            "slept laughed arrived smiled left waited danced cried ran sang fell swam walked "
            "disappeared lived worked",
        ),
        "VBD_S": _lex("VBD", "VERB", "said thought believed knew hoped claimed noticed felt"),
        "VB_T": _lex(
            "VB", "VERB", "see chase find like follow help visit watch carry open read write build buy"
        ),
        "VB_I": _lex("VB", "VERB", "sleep laugh arrive smile leave wait dance sing walk work"),
        "MD": _lex("MD", "AUX", "will could would might should can must"),
        "RB": _lex(
            "RB", "ADV",
            "quickly slowly often never always quietly happily suddenly today yesterday again soon "
            "carefully rarely",
        ),
        "RB_D": _lex("RB", "ADV", "very quite rather too so extremely"),
        "IN": _lex(
            "IN", "ADP", "in on with near under behind from about at into over without after before"
        ),
        "IN_C": _lex("IN", "SCONJ", "that whether"),
        "WDT": _lex("WDT", "PRON", "that which"),
        "CC": _lex("CC", "CCONJ", "and or but"),
        ".": {"xpos": ".", "upos": "PUNCT", "words": {".": 0.9, "!": 0.1}},
        ",": {"xpos": ",", "upos": "PUNCT", "words": {",": 1.0}},
    },
}


# --------------------------------------------------------------------- compiled form
@dataclass(frozen=True)
class _Rule:
    lhs: str
    prob: float
    children: tuple[str, ...]
    head: int  # index of the head child
    rels: tuple[str, ...]  # relation of each child ("" for the head)
    attach: tuple[int, ...]  # child whose head each non-head child attaches to


def _compile_rule(lhs: str, prob: float, rhs: tuple[str, ...]) -> _Rule:
    children, rels, attach, head = [], [], [], -1
    for i, spec in enumerate(rhs):
        symbol, rel = spec.rsplit("/", 1)
        children.append(symbol)
        if rel == "*":
            head = i
            rels.append("")
            attach.append(i)
        else:
            rel, _, target = rel.partition("@")
            rels.append(rel)
            attach.append(int(target) if target else -1)
    if head < 0:
        raise ValueError(f"rule {lhs} -> {rhs} has no head child")
    attach = [head if a < 0 else a for a in attach]
    return _Rule(lhs, float(prob), tuple(children), head, tuple(rels), tuple(attach))


def _compile(grammar: dict) -> dict[str, tuple[list[_Rule], np.ndarray]]:
    compiled = {}
    for lhs, rules in grammar["rules"].items():
        rs = [_compile_rule(lhs, p, rhs) for p, rhs in rules]
        probs = np.array([r.prob for r in rs])
        if not np.isclose(probs.sum(), 1.0):
            raise ValueError(f"rules of {lhs} sum to {probs.sum()}, not 1")
        compiled[lhs] = (rs, np.cumsum(probs))
    return compiled


_RULES = _compile(DEMO_GRAMMAR)
_LEXICON = {
    pt: (list(entry["words"]), np.cumsum(list(entry["words"].values())), entry["xpos"], entry["upos"])
    for pt, entry in DEMO_GRAMMAR["lexicon"].items()
}


# ------------------------------------------------------------------------ sampling
class _TooLong(Exception):
    """Raised while sampling when a sentence exceeds the length limit."""


def _draw(cumulative: np.ndarray, rng: np.random.Generator) -> int:
    return min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), len(cumulative) - 1)


class _Builder:
    """Grows one sentence: words, tags and dependencies while sampling its tree."""

    def __init__(self, rng: np.random.Generator, max_len: int):
        self.rng = rng
        self.max_len = max_len
        self.words: list[str] = []
        self.xpos: list[str] = []
        self.upos: list[str] = []
        self.heads: list[int] = []
        self.deprels: list[str] = []

    def expand(self, symbol: str) -> tuple[Tree, int]:
        """Sample a subtree of ``symbol``; returns it and its head word's 0-based index."""
        if symbol in _LEXICON:
            words, cumulative, xpos, upos = _LEXICON[symbol]
            if len(self.words) >= self.max_len:
                raise _TooLong
            self.words.append(words[_draw(cumulative, self.rng)])
            self.xpos.append(xpos)
            self.upos.append(upos)
            self.heads.append(-1)
            self.deprels.append("")
            return Tree(xpos, [self.words[-1]]), len(self.words) - 1
        rules, cumulative = _RULES[symbol]
        rule = rules[_draw(cumulative, self.rng)]
        subtrees, child_heads = zip(*(self.expand(child) for child in rule.children))
        for i, rel in enumerate(rule.rels):
            if i != rule.head:
                self.heads[child_heads[i]] = child_heads[rule.attach[i]]
                self.deprels[child_heads[i]] = rel
        return Tree(DEMO_GRAMMAR["labels"][symbol], list(subtrees)), child_heads[rule.head]


def _sample_sentence(rng: np.random.Generator, max_len: int, number: int) -> Sentence:
    while True:
        builder = _Builder(rng, max_len)
        try:
            tree, root = builder.expand(DEMO_GRAMMAR["start"])
        except _TooLong:
            continue
        builder.heads[root] = -1
        builder.deprels[root] = "root"
        return Sentence(
            words=builder.words,
            tags={"xpos": builder.xpos, "upos": builder.upos},
            heads=[h + 1 for h in builder.heads],  # 0-based with -1 = root -> 1-based with 0 = root
            deprels=builder.deprels,
            tree=tree,
            source=("<demo>", number),
            record=None,
        )


def demo_sentences(n_sentences: int = 2000, seed: int = 0, max_len: int = 40) -> list[Sentence]:
    """``n_sentences`` sentences drawn from :data:`DEMO_GRAMMAR` with ``numpy.random.default_rng(seed)``.

    Same seed, same sentences.  Each :class:`Sentence` has ``words``,
    ``tags = {"xpos", "upos"}``, 1-based ``heads`` (0 = root), UD ``deprels``,
    an ``nltk.Tree`` and ``source = ("<demo>", i + 1)``.
    """
    if n_sentences < 0:
        raise ValueError("n_sentences must be >= 0")
    if max_len < 3:
        raise ValueError("max_len must be >= 3 (the shortest demo sentence has 3 words)")
    rng = np.random.default_rng(seed)
    return [_sample_sentence(rng, max_len, i + 1) for i in range(n_sentences)]


def demo_corpus(n_sentences: int = 2000, seed: int = 0, max_len: int = 40) -> Corpus:
    """:func:`demo_sentences` encoded as a :class:`Corpus` named ``"demo"``."""
    return Corpus.from_sentences(demo_sentences(n_sentences, seed, max_len), name="demo")


# ------------------------------------------------------------- exact statistics
@dataclass
class DemoTagHMM:
    """Tag-bigram and emission statistics the demo PCFG induces exactly.

    ``start[a]`` = P(first tag = a), ``trans[a, b]`` = P(next tag = b | tag a)
    with column ``K`` = P(sentence ends | a), ``emit[a, w]`` = P(word w | tag a);
    ``expected_counts[a]`` is the expected number of tokens tagged ``a`` per
    sentence.  These are ratios of expected counts, i.e. the infinite-data
    maximum-likelihood HMM fitted to fully observed demo sentences.
    """

    tags: list[str]
    words: list[str]
    start: np.ndarray
    trans: np.ndarray
    emit: np.ndarray
    expected_counts: np.ndarray


def _symbol_tables():
    nonterms = list(_RULES)
    preterms = list(_LEXICON)
    n_index = {s: i for i, s in enumerate(nonterms)}
    p_index = {s: i for i, s in enumerate(preterms)}
    return nonterms, preterms, n_index, p_index


def _mean_matrices() -> tuple[np.ndarray, np.ndarray]:
    """Branching mean matrices: ``MN[A, B]`` / ``MP[A, a]`` = expected number of
    nonterminal ``B`` / preterminal ``a`` children of one ``A`` node."""
    nonterms, preterms, n_index, p_index = _symbol_tables()
    mn = np.zeros((len(nonterms), len(nonterms)))
    mp = np.zeros((len(nonterms), len(preterms)))
    for a, (rules, _) in _RULES.items():
        for rule in rules:
            for child in rule.children:
                if child in n_index:
                    mn[n_index[a], n_index[child]] += rule.prob
                else:
                    mp[n_index[a], p_index[child]] += rule.prob
    return mn, mp


def grammar_spectral_radius() -> float:
    """Spectral radius of the nonterminal mean matrix; < 1 iff the PCFG is subcritical
    (its trees are finite with probability one and have finite expected size)."""
    mn, _ = _mean_matrices()
    return float(np.max(np.abs(np.linalg.eigvals(mn))))


def _corner_distributions(position: int) -> np.ndarray:
    """``C[A, a]`` = P(the leftmost (``position=0``) / rightmost (``-1``) preterminal
    under ``A`` is ``a``), solving ``C = F_N C + F_P`` where ``F`` sums the
    probabilities of the rules of ``A`` whose first/last child is a given symbol."""
    nonterms, preterms, n_index, p_index = _symbol_tables()
    fn = np.zeros((len(nonterms), len(nonterms)))
    fp = np.zeros((len(nonterms), len(preterms)))
    for a, (rules, _) in _RULES.items():
        for rule in rules:
            child = rule.children[position]
            if child in n_index:
                fn[n_index[a], n_index[child]] += rule.prob
            else:
                fp[n_index[a], p_index[child]] += rule.prob
    return np.linalg.solve(np.eye(len(nonterms)) - fn, fp)


def demo_tag_hmm(column: str = "xpos") -> DemoTagHMM:
    """Exact first-order statistics of the demo grammar's tag sequences.

    With ``n = (I - M_N^T)^{-1} e_TOP`` the expected number of nodes of each
    nonterminal per sentence (``M`` the branching mean matrices), every adjacent
    token pair is adjacent children's right/left corners in exactly one rule
    application, and sibling subtrees are independent, so

        E[#(a, b)] = sum_rules n_lhs p(rule) sum_{adjacent X Y} R_X(a) L_Y(b),

    with ``L``/``R`` the left/right corner distributions (identity on
    preterminals).  Start = ``L_TOP``, end = ``R_TOP``; emissions mix the
    lexicons of the preterminals sharing a tag by their expected counts.
    """
    if column not in ("xpos", "upos"):
        raise ValueError("column must be 'xpos' or 'upos'")
    nonterms, preterms, n_index, p_index = _symbol_tables()
    mn, mp = _mean_matrices()
    e_top = np.zeros(len(nonterms))
    e_top[n_index[DEMO_GRAMMAR["start"]]] = 1.0
    n_nodes = np.linalg.solve(np.eye(len(nonterms)) - mn.T, e_top)
    n_pre = mp.T @ n_nodes  # expected count of each preterminal per sentence

    left = np.vstack([_corner_distributions(0), np.eye(len(preterms))])
    right = np.vstack([_corner_distributions(-1), np.eye(len(preterms))])
    row = {**n_index, **{p: len(nonterms) + i for i, p in enumerate(preterms)}}
    pair = np.zeros((len(preterms), len(preterms)))
    for a, (rules, _) in _RULES.items():
        for rule in rules:
            weight = n_nodes[n_index[a]] * rule.prob
            for x, y in zip(rule.children[:-1], rule.children[1:]):
                pair += weight * np.outer(right[row[x]], left[row[y]])
    top = row[DEMO_GRAMMAR["start"]]

    tags = sorted({entry[column] for entry in DEMO_GRAMMAR["lexicon"].values()})
    t_index = {t: i for i, t in enumerate(tags)}
    words = sorted({w for entry in DEMO_GRAMMAR["lexicon"].values() for w in entry["words"]})
    w_index = {w: i for i, w in enumerate(words)}
    to_tag = np.zeros((len(preterms), len(tags)))  # preterminal -> tag indicator
    emit_counts = np.zeros((len(tags), len(words)))
    for p, entry in DEMO_GRAMMAR["lexicon"].items():
        to_tag[p_index[p], t_index[entry[column]]] = 1.0
        for w, prob in entry["words"].items():
            emit_counts[t_index[entry[column]], w_index[w]] += n_pre[p_index[p]] * prob

    tag_pairs = to_tag.T @ pair @ to_tag
    ends = to_tag.T @ right[top]
    counts = to_tag.T @ n_pre
    trans = np.hstack([tag_pairs, ends[:, None]]) / counts[:, None]
    return DemoTagHMM(
        tags=tags,
        words=words,
        start=to_tag.T @ left[top],
        trans=trans,
        emit=emit_counts / counts[:, None],
        expected_counts=counts,
    )
