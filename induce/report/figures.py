"""Matplotlib figures of the report, each returned as an inline ``<svg>`` string.

matplotlib is an optional dependency (the ``plot`` extra); :func:`require_matplotlib`
raises a :class:`~induce.errors.ConfigError` naming ``pip install induce[plot]``
when it is missing.  Figures are built as bare ``matplotlib.figure.Figure``
objects (never through pyplot, so no GUI backend is touched and the caller's
pyplot state and rcParams are left alone), styled inside an ``rc_context``, and
saved with no metadata (no date, no creator URL) and a fixed hash salt, so the
same data gives the same bytes.
"""

from __future__ import annotations

import functools
import io
import math
from typing import Sequence

import numpy as np

from ..errors import ConfigError

PALETTE = "tab10"
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "induce", "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False}


def require_matplotlib():
    """The ``matplotlib`` module, or a ConfigError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("the HTML report draws its figures with matplotlib; "
                          "install it with: pip install induce[plot]") from None
    return matplotlib


def colormap(name: str):
    return require_matplotlib().colormaps[name]


def _styled(draw):
    """Run a figure function under :data:`STYLE` (rcParams restored afterwards)."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with require_matplotlib().rc_context(STYLE):
            return draw(*args, **kwargs)
    return wrapper


def _figure(**kwargs):
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def to_svg(fig) -> str:
    """Serialize ``fig`` as an ``<svg>`` element (no XML prolog, no metadata)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Creator": None, "Date": None, "Format": None,
                                                                   "Type": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


#: the widest figure (inches): 11 in is 792 pt, about 1,060 px, inside the page's 1,150 px
MAX_WIDTH = 11.0


def _grid(n: int, cols: int = 3, size: tuple[float, float] = (3.6, 2.4)):
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    fig = _figure(figsize=(size[0] * cols, size[1] * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _figure_legend(fig, handles: dict, title: str | None = None) -> None:
    """One legend for the whole figure, above its panels (never over a curve): ``handles`` maps a label to
    its artist; nothing for a single unnamed line."""
    if len(handles) > 1 or (handles and next(iter(handles))):
        fig.legend(list(handles.values()), list(handles), loc="outside upper center", ncols=min(len(handles), 8),
                   fontsize=7, frameon=False, title=title, title_fontsize=7)


@_styled
def curves_svg(panels: dict[str, dict[str, tuple[Sequence[float], Sequence[float]]]], xlabel: str,
               colors: dict[str, str] | None = None) -> str:
    """One small panel per quantity; each panel maps a line label to its ``(x, y)`` points.

    A label has one colour in every panel: ``colors`` maps a label's prefix (before ``" #"``) to a colour so
    that the runs of one algorithm share it (else the palette in order of first appearance); one legend above
    the panels names each prefix once.
    """
    from matplotlib.ticker import MaxNLocator

    palette = colormap(PALETTE)
    colors = dict(colors or {})
    for lines in panels.values():
        for label in lines:
            colors.setdefault(label.split(" #")[0], palette(len(colors) % palette.N))
    fig, axes = _grid(len(panels))
    handles = {}
    for ax, (name, lines) in zip(axes, panels.items()):
        for label, (x, y) in lines.items():
            prefix = label.split(" #")[0]
            (line,) = ax.plot(x, y, marker="o" if len(x) < 30 else None, markersize=3, linewidth=1.2,
                              color=colors[prefix], alpha=0.8)
            handles.setdefault(prefix, line)
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _figure_legend(fig, handles)
    return to_svg(fig)


@_styled
def heatmap_svg(counts: np.ndarray, rows: Sequence[str], cols: Sequence[str], mapped: Sequence[int]) -> str:
    """``counts[s, g]`` as a heat map (colour: share of state ``s``'s tokens with gold tag ``g``);
    the many-to-one cell ``(s, mapped[s])`` of every state is outlined."""
    from matplotlib.patches import Rectangle

    counts = np.asarray(counts, dtype=float)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    fig = _figure(figsize=(max(4.0, 0.28 * len(cols) + 2), max(3.0, 0.22 * len(rows) + 1.5)))
    ax = fig.subplots()
    im = ax.imshow(share, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(len(cols)), labels=list(cols), rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)), labels=list(rows), fontsize=7)
    ax.set_xlabel("gold tag")
    ax.set_ylabel("induced state")
    for s, g in enumerate(mapped):
        ax.add_patch(Rectangle((g - 0.5, s - 0.5), 1, 1, fill=False, edgecolor="#ff3030", linewidth=1.2))
    fig.colorbar(im, ax=ax, label="share of the state's tokens", fraction=0.04)
    fig.tight_layout()
    return to_svg(fig)


@_styled
def bars_svg(labels: Sequence[str], values: Sequence[float], title: str, xlabel: str, ylabel: str) -> str:
    """A bar chart of ``values`` (one bar per label)."""
    fig = _figure(figsize=(min(MAX_WIDTH, max(4.0, 0.18 * len(labels) + 2)), 2.6))
    ax = fig.subplots()
    ax.bar(range(len(values)), values, color="#4c72b0")
    if len(labels) <= 60:
        ax.set_xticks(range(len(labels)), labels=list(labels), rotation=90, fontsize=7)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return to_svg(fig)


@_styled
def series_svg(values: np.ndarray, states: np.ndarray, names: Sequence[str] | None = None,
               time: np.ndarray | None = None) -> str:
    """A (T,) or (T, D) series, one panel per dimension, each point coloured by its state,
    with a strip of the state sequence underneath and a legend of the states' colours above."""
    from matplotlib.patches import Patch

    values = np.asarray(values, dtype=float)
    values = values[:, None] if values.ndim == 1 else values
    states = np.asarray(states)
    T, D = values.shape
    t = np.arange(T) if time is None else np.asarray(time)
    cmap = colormap(PALETTE if states.max(initial=0) < 10 else "tab20")  # colours repeat past 20 states
    fig = _figure(figsize=(10, 1.8 * D + 1.2), layout="constrained")
    axes = fig.subplots(D + 1, 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": [4] * D + [1]})
    for d in range(D):
        ax = axes[d, 0]
        ax.plot(t, values[:, d], color="#bbbbbb", linewidth=0.8, zorder=1)
        ax.scatter(t, values[:, d], c=states % cmap.N, cmap=cmap, vmin=0, vmax=cmap.N - 1, s=6, zorder=2)
        ax.set_ylabel(names[d] if names is not None and d < len(names) else f"x{d}")
    strip = axes[D, 0]
    strip.imshow((states % cmap.N)[None, :], aspect="auto", cmap=cmap, vmin=0, vmax=cmap.N - 1,
                 interpolation="nearest", extent=(t[0] - 0.5, t[-1] + 0.5, 0, 1))
    strip.set_yticks([])
    strip.set_ylabel("state")
    strip.set_xlabel("time")
    present = np.unique(states)
    handles = {", ".join(str(s) for s in present[present % cmap.N == c]): Patch(color=cmap(c))
               for c in np.unique(present % cmap.N)}
    _figure_legend(fig, handles, "state" if len(present) <= cmap.N else f"state (colours repeat every {cmap.N})")
    return to_svg(fig)
