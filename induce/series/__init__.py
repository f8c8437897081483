"""Numeric time series: readers and the :class:`HMMSegmenter` estimator (conjugate emission families)."""

from .readers import SeriesTable, read_series
from .hdp_hsmm import HDPHSMMSegmenter
from .hsmm import HSMMSegmenter
from .segmenter import HMMSegmenter

__all__ = ["HDPHSMMSegmenter", "HMMSegmenter", "HSMMSegmenter", "SeriesTable", "read_series"]
