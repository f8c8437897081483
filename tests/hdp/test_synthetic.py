"""The synthetic recovery data of thesis 5.5.1: the generators match the stated HMMs."""

import numpy as np

from induce.taggers.synthetic import PHI, THETA_NEG, THETA_POS, sample_beal_grammar, sample_zhang


def test_phi_is_the_cyclic_three_symbol_emission_matrix():
    # eq. 5.70 (second row corrected, see the module): every state emits three
    # symbols with probability 1/3, and neighbouring states share exactly one
    np.testing.assert_allclose(PHI.sum(axis=1), 1.0)
    supports = [set(np.flatnonzero(row)) for row in PHI]
    assert supports == [{0, 6, 7}, {0, 1, 2}, {2, 3, 4}, {4, 5, 6}]
    for k in range(4):
        assert len(supports[k] & supports[(k + 1) % 4]) == 1
    np.testing.assert_allclose(THETA_POS.sum(axis=1), 1.0)
    np.testing.assert_allclose(THETA_NEG.sum(axis=1), 1.0)


def test_zhang_data_follow_phi_and_theta():
    corpus = sample_zhang("neg", n_sequences=200, length=50, seed=7)
    x = np.array([int(w[1:]) for s in corpus.sentences for w in s.words])
    z = np.array([int(t[1:]) for s in corpus.sentences for t in s.tags["state"]])
    for k in range(4):
        freq = np.bincount(x[z == k], minlength=8) / (z == k).sum()
        np.testing.assert_allclose(freq, PHI[k], atol=0.03)
    # theta_neg: state k moves to k + 1 with probability 0.99
    stay = np.mean([np.mean(np.diff([int(t[1:]) for t in s.tags["state"]]) % 4 == 1)
                    for s in corpus.sentences])
    assert 0.97 < stay <= 1.0


def test_beal_grammar_sequences_belong_to_their_type():
    corpus = sample_beal_grammar(n_sequences=60, length=30, seed=3)
    for s in corpus.sentences:
        text = "".join(s.words)
        states = {int(t[1:]) for t in s.tags["state"]}
        if states <= {0, 1, 2}:
            assert text in "abc" * 12
        elif states <= {3, 4, 5}:
            assert text in "acb" * 12
        else:
            assert states == {6} and set(text) <= {"a", "b"}
