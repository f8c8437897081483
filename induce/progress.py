"""The progress bar of every iterative fit: tqdm, ending at 100% when the stopping rule ends a run early.

A fit's bar counts towards its iteration cap (``n_iter``), an upper bound: a run whose stopping rule fires
after 37 of 500 passes is complete, so on closing the bar's total becomes the count reached (``37/37``,
100%) instead of staying at 7%.  Whether a bar is drawn at all is the caller's ``verbose`` (the CLI: only
on a terminal, :func:`induce.cli.common.show_progress`).  Fits that take no ``verbose`` (the series
segmenters' passes, :class:`induce.algorithms.loop.SeriesLoop`) draw one when the caller turns bars on with
:func:`bars`.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from tqdm import tqdm

#: whether :func:`passes` draws a bar (set by :func:`bars`)
_SHOW = ContextVar("induce_progress_bars", default=False)


class ProgressBar(tqdm):
    """:class:`tqdm.tqdm` whose :meth:`close` before the total sets the total to the count reached (the items
    handed out so far, when iterating: a fit closes its bar inside the pass that converged)."""

    _handed_out = 0

    def __iter__(self):
        for item in super().__iter__():
            self._handed_out += 1
            yield item

    def close(self):
        reached = max(self.n, self._handed_out)
        if not self.disable and self.total is not None and 0 < reached < self.total:
            self.n = self.total = reached
        super().close()


@contextmanager
def bars(show: bool = True):
    """Within the block, :func:`passes` draws its bars (``show=False``: it does not)."""
    token = _SHOW.set(bool(show))
    try:
        yield
    finally:
        _SHOW.reset(token)


def passes(n: int, desc: str):
    """Pass numbers ``0..n-1``; inside :func:`bars`, counted on a :class:`ProgressBar` named ``desc`` that a loop
    ending early (``break``: the stopping rule fired) closes at 100%."""
    if not _SHOW.get():
        yield from range(n)
        return
    bar = ProgressBar(range(n), desc=desc, unit="it", dynamic_ncols=True)
    try:
        yield from bar
    finally:
        bar.close()
