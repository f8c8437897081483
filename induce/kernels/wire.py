"""The wire format's compiled loops (:mod:`induce.distributed.rounds`): a round's delta rows packed to float16
mantissas with a power-of-two exponent a row, and packed rows added to a table of counts, each in one pass and
bit for bit the numpy expressions they replace (numpy converts float64 to float16 in software); and two sparse
vectors (or tables of rows) added on the union of their ids (the tree sums of the em / vi and cvi2 counts and of
the alignment E-step, :mod:`induce.distributed.batch`, :mod:`induce.distributed.align`)."""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def half_bits(bits: int) -> int:
    """The IEEE half-precision bits of the float64 of IEEE bits ``bits`` rounded to nearest, ties to even (as
    numpy's float64 -> float16): sign, 5 exponent bits (bias 15), 10 mantissa bits; subnormal below ``2^-14``,
    zero below ``2^-25``."""
    sign = (bits >> 48) & 0x8000
    exp = (bits >> 52) & 0x7FF
    mant = bits & 0xFFFFFFFFFFFFF
    if exp == 0x7FF:  # inf, nan
        return sign | 0x7C00 | (0x200 if mant else 0)
    E = exp - 1023
    if E < -25:  # (float64 subnormals included) below half the smallest half subnormal
        return sign
    if E >= -14:  # a normal half: the mantissa's top 10 bits, 42 rounded off
        m, rest, half, top = mant >> 42, mant & ((1 << 42) - 1), np.int64(1) << 41, (E + 15) << 10
    else:  # a subnormal half: (2^52 + mant) 2^(E - 52) in units of 2^-24
        s = 28 - E
        full = mant | (np.int64(1) << 52)
        m, rest, half, top = full >> s, full & ((np.int64(1) << s) - 1), np.int64(1) << (s - 1), 0
    if rest > half or (rest == half and (m & 1)):
        m += 1  # (a carry out of the mantissa goes into the exponent, as it should)
    h = top + m
    return sign | (0x7C00 if h >= 0x7C00 else h)


@numba.njit(cache=True)
def pack_rows(rows, base, coef: float, q, e) -> None:
    """:func:`induce.distributed.rounds.pack` of ``coef (rows - base)`` (``base`` with no rows: of ``coef rows``)
    into ``q`` (float16 bits) and ``e``: each row's exponent (``frexp`` of its largest magnitude) and its entries
    times ``2^-e`` rounded to half.  The product by the power of two ``2^-e`` is ``ldexp`` (both round an
    underflow to nearest), taken by ``ldexp`` itself only where ``2^-e`` is not a normal float64; the difference
    and the product by ``coef`` are those of the numpy expression, without its temporaries."""
    K = rows.shape[1]
    scaled = np.empty(K)
    bits = scaled.view(np.int64)
    for r in range(rows.shape[0]):
        top = 0.0
        for k in range(K):
            scaled[k] = coef * (rows[r, k] - base[r, k]) if base.shape[0] else coef * rows[r, k]
            top = max(top, abs(scaled[k]))
        ex = math.frexp(top)[1]
        e[r] = ex
        if -1023 <= ex <= 1022:
            power = math.ldexp(1.0, -ex)
            for k in range(K):
                scaled[k] *= power
        else:
            for k in range(K):
                scaled[k] = math.ldexp(scaled[k], -ex)
        for k in range(K):
            q[r, k] = half_bits(bits[k])


#: the float64 value of every float16 bit pattern (exact): a packed entry decoded by one lookup, where numpy
#: converts float16 in software
HALF_VALUES = np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float64)


@numba.njit(cache=True)
def add_rows(scaled, at, q, e, factor: float, member, values) -> None:
    """``scaled[at[i]] += q[i] 2^e[i] / factor`` for each row ``i`` whose word is in ``member`` (every row with an
    empty ``member``; ``at`` distinct), ``q`` the float16 bits decoded by ``values`` (:data:`HALF_VALUES`):
    :func:`induce.distributed.rounds.unpack`'s product and the division in float64, the float operations of
    ``scaled[at] += unpack((q, e)) / factor`` in one pass (25,000 rows of 45: 5.5 -> 3.0 ms, load ~1; the halves
    decoded by the table instead of numpy's conversion to float32 before the pass: 3.7 -> 2.1 ms, load ~2)."""
    for i in range(at.shape[0]):
        w = at[i]
        if member.shape[0] and not member[w]:
            continue
        s = math.ldexp(1.0, e[i])
        for k in range(q.shape[1]):
            scaled[w, k] += (values[q[i, k]] * s) / factor


def add_sparse(ia, va, ib, vb):
    """The sum of two sparse vectors (or tables of rows) given by sorted distinct ids and values ``va`` (``len(ia)``
    values or rows), as ``(ids, values)`` on the union of their ids, in one merge (``O(n + m)``; ``np.union1d`` and
    ``searchsorted`` sort): where both hold an id, ``va + vb``; elsewhere the one value.  Bit for bit ``out =
    zeros; out[pos_a] += va; out[pos_b] += vb``."""
    row = np.shape(va)[1:]
    width = int(np.prod(row))
    ids, vals = _merge_rows(ia, np.asarray(va, dtype=np.float64).reshape(len(ia), width), ib,
                            np.asarray(vb, dtype=np.float64).reshape(len(ib), width))
    return ids, vals.reshape((len(ids),) + row)


@numba.njit(cache=True)
def _merge_rows(ia, va, ib, vb):
    """:func:`add_sparse` on rows ``va`` (n, K) and ``vb`` (m, K)."""
    n, m, K = ia.shape[0], ib.shape[0], va.shape[1]
    ids = np.empty(n + m, dtype=ia.dtype)
    vals = np.empty((n + m, K))
    i = j = k = 0
    while i < n and j < m:
        if ia[i] < ib[j]:
            ids[k] = ia[i]
            vals[k] = va[i]
            i += 1
        elif ib[j] < ia[i]:
            ids[k] = ib[j]
            vals[k] = vb[j]
            j += 1
        else:
            ids[k] = ia[i]
            vals[k] = va[i] + vb[j]
            i += 1
            j += 1
        k += 1
    for i in range(i, n):
        ids[k] = ia[i]
        vals[k] = va[i]
        k += 1
    for j in range(j, m):
        ids[k] = ib[j]
        vals[k] = vb[j]
        k += 1
    return ids[:k], vals[:k]
