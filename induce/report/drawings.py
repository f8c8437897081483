"""Hand-laid-out inline SVG for the report's examples: trees, dependency arcs, alignment grids.

These need no plotting library: each function returns one ``<svg>`` element as a
string, sized in pixels, with every word escaped.  Layout rules:

* constituency tree: leaves left to right (each slot as wide as its word or its
  unary ancestors' labels), a node centred over its children, one row per depth;
* dependency arcs: words on a baseline, predicted arcs above it (head -> dependent,
  arrowhead at the dependent), gold arcs below it; a root arc is a vertical line;
* alignment grid: source words as rows, target words as columns; a filled cell is
  a predicted link, a thick outline a gold sure link, a thin outline a possible link.
"""

from __future__ import annotations

from html import escape
from typing import Sequence

from nltk import Tree

CHAR_W = 7.2  # px per character of the 12 px sans-serif text (an estimate for layout)
_FONT = 'font-family="sans-serif"'


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(label)}">'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, s: str, anchor: str = "middle", extra: str = "", size: int = 12) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {_FONT} font-size="{size}" {extra}>'
            f'{escape(str(s))}</text>')


def tree_svg(tree: Tree | str, row: float = 40.0) -> str:
    """A constituency tree (``nltk.Tree`` or its bracketed string) as SVG."""
    if isinstance(tree, str):
        tree = Tree.fromstring(tree)
    leaves: list[tuple[float, str, float]] = []  # (right edge, word, width)
    nodes: list[tuple[float, float, str, list]] = []  # (x, y, label, children's anchors)
    body: list[str] = []
    gap = 10.0

    def slot(text: str, chars: int) -> float:
        """Append a leaf slot as wide as ``text`` or ``chars`` characters; returns its centre."""
        width = max(CHAR_W * max(len(text), chars), 12.0)
        start = leaves[-1][0] if leaves else 0.0
        leaves.append((start + gap + width, text, width))
        return start + gap + width / 2

    def place(node, depth: int, label_chars: int = 0) -> tuple[float, float]:
        """Lay out ``node``; returns its (x, y) anchor (``y < 0``: a leaf, on the bottom row).  Leaves go
        left to right, each as wide as its word or the longest label of its chain of unary ancestors."""
        if not isinstance(node, Tree):
            return slot(str(node), label_chars), -1.0
        chars = max(len(node.label()), label_chars if len(node) <= 1 else 0)
        kids = [place(child, depth + 1, chars) for child in node] or [(slot("", chars), -1.0)]
        x = (kids[0][0] + kids[-1][0]) / 2
        y = 16.0 + depth * row
        nodes.append((x, y, node.label(), kids))
        return x, y

    place(tree, 0)
    depth = max(int(round((y - 16.0) / row)) for _, y, _, _ in nodes) + 1
    leaf_y = 16.0 + depth * row
    for x, y, label, kids in nodes:
        for kx, ky in kids:
            ky = leaf_y if ky < 0 else ky
            body.append(f'<line x1="{x:.1f}" y1="{y + 4:.1f}" x2="{kx:.1f}" y2="{ky - 12:.1f}" stroke="#777"/>')
        body.append(_text(x, y, label, extra='font-weight="bold" fill="#1f4e79"'))
    for right, word, width in leaves:
        body.append(_text(right - width / 2, leaf_y, word))
    width = (leaves[-1][0] if leaves else 0.0) + gap
    return _svg(width, leaf_y + 10, body, "constituency tree")


def _word_positions(words: Sequence[str], gap: float = 14.0) -> tuple[list[float], float]:
    xs, x = [], gap
    for w in words:
        width = max(CHAR_W * len(w), 14.0)
        xs.append(x + width / 2)
        x += width + gap
    return xs, x


def dependency_svg(words: Sequence[str], heads: Sequence[int], gold: Sequence[int] | None = None) -> str:
    """Predicted heads (1-based, 0 = root) as arcs above the words; ``gold`` heads as arcs below.

    Predicted arcs that agree with gold are drawn in blue, the others in red.
    """
    xs, width = _word_positions(words)
    span = max([abs(h - i - 1) for i, h in enumerate(heads) if h > 0] + [1])
    up = 24.0 + 14.0 * min(span, 12)
    down = up if gold is not None else 0.0
    base = up + 18.0
    body = ['<defs><marker id="arrow" viewBox="0 0 8 8" refX="4" refY="4" markerWidth="6" markerHeight="6" '
            'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="context-stroke"/></marker></defs>']

    def arcs(values, sign: float, y0: float, color_of) -> None:
        for i, h in enumerate(values):
            x = xs[i]
            color = color_of(i, h)
            if h == 0:  # a vertical line from a ROOT label (9 px text, inside the drawing)
                end = y0 + sign * (up - 14)
                body.append(f'<line x1="{x:.1f}" y1="{end:.1f}" x2="{x:.1f}" y2="{y0:.1f}" '
                            f'stroke="{color}" stroke-width="1.5" marker-end="url(#arrow)"/>')
                body.append(_text(x, end - 3 if sign < 0 else end + 10, "ROOT", extra=f'fill="{color}"', size=9))
                continue
            hx = xs[h - 1]
            height = 12.0 + 14.0 * min(abs(h - 1 - i), 12)
            body.append(f'<path d="M{hx:.1f},{y0:.1f} C{hx:.1f},{y0 + sign * height:.1f} {x:.1f},'
                        f'{y0 + sign * height:.1f} {x:.1f},{y0:.1f}" fill="none" stroke="{color}" '
                        f'stroke-width="1.5" marker-end="url(#arrow)"/>')

    ok = (lambda i, h: "#1f77b4" if gold is None or gold[i] == h else "#d62728")
    arcs(heads, -1.0, base - 14.0, ok)
    for x, w in zip(xs, words):
        body.append(_text(x, base, w))
    if gold is not None:
        arcs(gold, 1.0, base + 6.0, lambda i, h: "#2ca02c")
    return _svg(width, base + down + 12.0, body, "dependency arcs")


def alignment_svg(source: Sequence[str], target: Sequence[str], links, sure=None, possible=None,
                  cell: float = 18.0) -> str:
    """An alignment grid: rows = source words, columns = target words; links are ``(i, j)`` 0-based pairs."""
    left = max([CHAR_W * len(w) for w in source] + [10.0]) + 8.0
    top = max([CHAR_W * len(w) for w in target] + [10.0]) + 8.0
    body = []
    for j, w in enumerate(target):
        x = left + (j + 0.5) * cell + 4
        body.append(_text(x, top - 6, w, anchor="start", extra=f'transform="rotate(-90 {x:.1f} {top - 6:.1f})"'))
    for i, w in enumerate(source):
        body.append(_text(left - 6, top + (i + 0.7) * cell, w, anchor="end"))
    for i in range(len(source)):
        for j in range(len(target)):
            body.append(f'<rect x="{left + j * cell:.1f}" y="{top + i * cell:.1f}" width="{cell}" height="{cell}" '
                        f'fill="none" stroke="#eee"/>')
    for i, j in links:
        body.append(f'<rect x="{left + j * cell + 3:.1f}" y="{top + i * cell + 3:.1f}" width="{cell - 6}" '
                    f'height="{cell - 6}" fill="#1f77b4"/>')
    sure = set(map(tuple, sure or ()))
    for i, j in set(map(tuple, possible or ())) - sure:
        body.append(f'<rect x="{left + j * cell + 1:.1f}" y="{top + i * cell + 1:.1f}" width="{cell - 2}" '
                    f'height="{cell - 2}" fill="none" stroke="#ff7f0e" stroke-dasharray="3,2"/>')
    for i, j in sure:
        body.append(f'<rect x="{left + j * cell + 1:.1f}" y="{top + i * cell + 1:.1f}" width="{cell - 2}" '
                    f'height="{cell - 2}" fill="none" stroke="#d62728" stroke-width="2"/>')
    return _svg(left + len(target) * cell + 8, top + len(source) * cell + 8, body, "alignment grid")
