"""Numeric time series: readers and the :class:`HMMSegmenter` estimator (conjugate emission families)."""

from .readers import SeriesTable, read_series
from .segmenter import HMMSegmenter

__all__ = ["HMMSegmenter", "SeriesTable", "read_series"]
