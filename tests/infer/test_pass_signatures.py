"""The compiled HMM passes give bit-for-bit the outputs recorded before they were split into named steps."""

from __future__ import annotations

import pytest

from tests.conftest import CORPORA

from .pass_signatures import recorded, signatures

RECORDED = recorded()


@pytest.fixture(scope="module")
def computed():
    return signatures(CORPORA)


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_pass_outputs_unchanged(case, computed):
    if case.startswith("conll300/") and CORPORA is None:
        pytest.skip("real corpora not found")
    assert computed[case] == RECORDED[case]
