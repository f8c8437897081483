import numpy as np
import pytest

from induce.errors import ConfigError
from induce.infer.schedules import blend, check_schedule, minibatches, step_size


def test_step_size_decreases_and_is_at_most_one():
    rhos = [step_size(m, tau=1.0, kappa=0.7) for m in range(50)]
    assert rhos[0] == pytest.approx(2.0 ** -0.7)
    assert all(a > b for a, b in zip(rhos, rhos[1:]))
    assert step_size(0, tau=0.0, kappa=0.5) == 1.0


def test_blend_is_the_robbins_monro_average():
    N = np.array([[2.0, 4.0]])
    blend(N, np.array([[1.0, 0.0]]), rho=0.25, scale=8.0)
    np.testing.assert_allclose(N, [[0.75 * 2 + 0.25 * 8, 0.75 * 4]])


def test_minibatches_cover_each_epoch_once_and_are_seeded():
    a = [b.tolist() for b in minibatches(10, 3, np.random.default_rng(5), n_epochs=2)]
    b = [b.tolist() for b in minibatches(10, 3, np.random.default_rng(5), n_epochs=2)]
    assert a == b
    assert sorted(sum(a[:4], [])) == list(range(10))
    assert sorted(sum(a[4:], [])) == list(range(10))


@pytest.mark.parametrize("tau,kappa,m", [(-1, 0.7, 10), (1, 0.3, 10), (1, 1.5, 10), (1, 0.7, 0)])
def test_check_schedule_rejects_bad_options(tau, kappa, m):
    with pytest.raises(ConfigError):
        check_schedule(tau, kappa, m)
