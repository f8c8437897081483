"""The Hansards normalisation on hand cases and on the real en-fr gold text."""

from __future__ import annotations

from induce.align.normalize import expand_contractions, fold_accents, normalize_text, normalize_tokens, tokenize
from induce.corpus.parallel import read_parallel


def test_tokenize_splits_punctuation_hyphens_and_clitics():
    assert tokenize("The hon. member's motion, Mr. Speaker: don't.", "en") == [
        "The", "hon.", "member", "'s", "motion", ",", "Mr.", "Speaker", ":", "do", "n't", "."]
    assert tokenize("deep-rooted 35,000 at 6.42 p.m. (U.S.)", "en") == [
        "deep", "-", "rooted", "35,000", "at", "6.42", "p.m.", "(", "U.S.", ")"]
    assert tokenize("L'entraide d'aujourd'hui, M. Caccia.", "fr") == [
        "L'", "entraide", "d'", "aujourd'", "hui", ",", "M.", "Caccia", "."]


def test_expand_french_contractions():
    assert expand_contractions("Du pain au lait des enfants aux champs".split(), "fr") == [
        "de", "le", "pain", "à", "le", "lait", "de", "les", "enfants", "à", "les", "champs"]
    assert expand_contractions(["l'", "j'", "qu'", "s'", "aujourd'"], "fr") == ["le", "je", "que", "se", "aujourd'"]
    assert expand_contractions(["du"], "en") == ["du"]


def test_fold_and_normalize_tokens_keep_positions():
    assert fold_accents("Élève à Montréal, ça") == "Eleve a Montreal, ca"
    assert normalize_tokens(["à", "le", "Président", "Orateur"]) == ["a", "le", "president", "orateur"]


def test_raw_training_text_matches_gold_conventions():
    # the accent-stripped raw training line and its gold-style counterpart meet in one form
    raw = "S'il vous plait, nous avons le sens du partage et de l'entraide aujourd'hui."
    gold = "se il vous plaît , nous avons le sens de le partage et de le entraide aujourd' hui ."
    assert normalize_text(raw, "fr") == normalize_tokens(gold.split())


def test_gold_text_is_a_fixed_point_of_tokenisation(corpora):
    root = corpora / "align" / "en-fr"
    pairs = list(read_parallel(root / "trial.e", root / "trial.f"))
    same_e = sum(tokenize(" ".join(e), "en") == e for e, _ in pairs)
    same_f = sum(expand_contractions(tokenize(" ".join(f), "fr"), "fr") == f for _, f in pairs)
    assert same_e >= 0.9 * len(pairs) and same_f >= 0.9 * len(pairs)
