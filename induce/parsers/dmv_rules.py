"""Universal syntactic rules over coarse tag classes (Naseem, Chen, Barzilay & Johnson 2010).

Naseem et al. guide grammar induction with a short list of head -> dependent
rules over coarse parts of speech that hold across languages, as a posterior
constraint: the expected share of the corpus' dependencies that obey a rule must
be at least a threshold (posterior regularisation, Ganchev et al. 2010; the
DMV side is in :mod:`induce.parsers.dmv`).  Their rules follow the
function-head conventions of the CoNLL treebanks (a preposition heads its noun,
an auxiliary its verb); Universal Dependencies makes content words heads
(``case``, ``aux``, ``cop`` attach to the content word), so the UPOS rule set
reverses those two rules and roots nominal clauses:

* Naseem et al. (Table 1): ROOT -> AUX, ROOT -> VERB, AUX -> VERB, ADP -> NOUN;
* UD (content heads): ROOT -> NOUN (nominal predicates head the clause), ROOT -> VERB,
  VERB -> AUX (``aux``), NOUN -> ADP (``case``);
* both: VERB -> NOUN, PRON, ADV, VERB; NOUN -> ADJ, DET, NOUN, NUM; ADJ -> ADV.

Tokens get a class from the first tag column that names one: ``upos`` (the
content-head rules), else the 12 universal tags of Petrov, Das & McDonald
(column ``universal``), the CoNLL 2007 Spanish CPOS tags, or Penn Treebank tags
(``xpos``/``pos``), all with the function-head rules, or the CoNLL 2007 Basque
CPOS tags (content heads: auxiliaries depend on the verb).  PROPN counts as NOUN.
"""

from __future__ import annotations

import numpy as np

#: coarse classes the rules are stated over; OTHER obeys no rule
CLASSES = ("NOUN", "VERB", "AUX", "PRON", "ADJ", "ADV", "DET", "NUM", "ADP", "OTHER")
OTHER = len(CLASSES) - 1
#: row of the rule matrix for the sentence's root
ROOT = len(CLASSES)

_COMMON = (("VERB", "NOUN"), ("VERB", "PRON"), ("VERB", "ADV"), ("VERB", "VERB"),
           ("NOUN", "ADJ"), ("NOUN", "DET"), ("NOUN", "NOUN"), ("NOUN", "NUM"), ("ADJ", "ADV"))
#: head -> dependent rules of Naseem et al. (2010), Table 1 (function heads)
FUNCTION_HEAD_RULES = (("ROOT", "AUX"), ("ROOT", "VERB"), ("AUX", "VERB"), ("ADP", "NOUN")) + _COMMON
#: the same rules under UD's content-head conventions (module docstring)
CONTENT_HEAD_RULES = (("ROOT", "NOUN"), ("ROOT", "VERB"), ("VERB", "AUX"), ("NOUN", "ADP")) + _COMMON

#: UPOS -> class (UD v2 tags; the rest OTHER)
UPOS_CLASS = {"NOUN": "NOUN", "PROPN": "NOUN", "VERB": "VERB", "AUX": "AUX", "PRON": "PRON", "ADJ": "ADJ",
              "ADV": "ADV", "DET": "DET", "NUM": "NUM", "ADP": "ADP"}
#: Petrov et al.'s universal tags -> class (no AUX: auxiliaries are VERB there)
UNIVERSAL_CLASS = {t: t for t in ("NOUN", "VERB", "PRON", "ADJ", "ADV", "DET", "NUM", "ADP")}
#: Penn Treebank tags -> class (as the en-ptb universal map, with MD as AUX, PRP$/WP$ as PRON)
PTB_CLASS = {**dict.fromkeys(("NN", "NNS", "NNP", "NNPS"), "NOUN"),
             **dict.fromkeys(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"), "VERB"), "MD": "AUX",
             **dict.fromkeys(("PRP", "PRP$", "WP", "WP$", "EX"), "PRON"),
             **dict.fromkeys(("JJ", "JJR", "JJS"), "ADJ"), **dict.fromkeys(("RB", "RBR", "RBS", "WRB"), "ADV"),
             **dict.fromkeys(("DT", "PDT", "WDT"), "DET"), "CD": "NUM", "IN": "ADP"}
#: CoNLL 2007 Spanish CPOS (AnCora) -> class; prepositions head their nouns there (function heads)
ANCORA_CLASS = {"n": "NOUN", "v": "VERB", "a": "ADJ", "r": "ADV", "d": "DET", "p": "PRON", "s": "ADP", "z": "NUM"}
#: CoNLL 2007 Basque CPOS (3LB) -> class; auxiliaries (ADL) depend on the main verb and case is a
#: suffix, so the content-head rules apply
BASQUE_CLASS = {"IZE": "NOUN", "ADI": "VERB", "ADT": "VERB", "ADL": "AUX", "DET": "DET", "ADJ": "ADJ",
                "ADB": "ADV", "IOR": "PRON"}
#: (column, class map, rules) tried in order
SOURCES = (("upos", UPOS_CLASS, CONTENT_HEAD_RULES), ("universal", UNIVERSAL_CLASS, FUNCTION_HEAD_RULES),
           ("cpos", ANCORA_CLASS, FUNCTION_HEAD_RULES), ("cpos", BASQUE_CLASS, CONTENT_HEAD_RULES),
           ("xpos", PTB_CLASS, FUNCTION_HEAD_RULES),
           ("pos", PTB_CLASS, FUNCTION_HEAD_RULES))
#: share of a column's tags that must be known to the class map (else it is not that tagset)
MIN_KNOWN = 0.5


def rule_matrix(rules) -> np.ndarray:
    """``R[head class or ROOT, dependent class]`` = 1.0 where a rule allows the arc, else 0.0."""
    index = {c: i for i, c in enumerate(CLASSES)}
    index["ROOT"] = ROOT
    matrix = np.zeros((len(CLASSES) + 1, len(CLASSES)))
    for head, dep in rules:
        matrix[index[head], index[dep]] = 1.0
    return matrix


def token_classes(corpus) -> tuple[str, np.ndarray, np.ndarray] | None:
    """``(column, classes, R)`` for ``corpus``: each token's class (int32, aligned with the tokens)
    from the first column of :data:`SOURCES` whose tags mostly (:data:`MIN_KNOWN`) have a class,
    and that column's rule matrix; ``None`` when no column qualifies."""
    index = {c: i for i, c in enumerate(CLASSES)}
    for name, classes, rules in SOURCES:
        if name not in corpus.tags:
            continue
        itos = corpus.tag_vocabs[name].itos
        lut = np.array([index[classes.get(t, "OTHER")] for t in itos], dtype=np.int32)
        ids = corpus.tags[name]
        known = np.isin(np.asarray(itos), list(classes))
        if len(ids) and known[ids].mean() >= MIN_KNOWN:
            return name, lut[ids], rule_matrix(rules)
    return None
