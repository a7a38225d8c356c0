"""The kernel fits' estimator (fitting.fit): least squares on log time, then Huber's M-estimator by iteratively
reweighted least squares, so that a few rows a table measured otherwise do not pull the form off the rest."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofcalc.fitting import HUBER_K, MAD_SIGMA, Design, fit, huber_weights


def test_huber_weights_by_hand():
    # r = -0.1, 0.1, -0.1, 0.1, 1.0: median 0.1; |r - 0.1| = 0.2, 0, 0.2, 0, 0.9, median 0.2;
    # s = 1.4826 x 0.2 = 0.29652, k s = 1.345 x 0.29652 = 0.3988194; the 1.0 row weighs 0.3988194 / 1.0
    w = huber_weights([-0.1, 0.1, -0.1, 0.1, 1.0])
    assert w == pytest.approx([1, 1, 1, 1, 0.3988194], abs=1e-7)
    assert HUBER_K * MAD_SIGMA * 0.2 == pytest.approx(0.3988194, abs=1e-7)


def test_a_version_folder_must_name_a_version():
    from roofcalc.fitting import _version

    assert _version("0.5.6.post2") == (0, 5, 6) and _version("1.3.0rc20") == (1, 3, 0)
    assert _version("0.5.10") < _version("0.5.14")  # by number, not by text
    with pytest.raises(ValueError):
        _version("latest")


def test_no_weights_where_every_row_is_within_the_scale():
    assert huber_weights([0.1, -0.1, 0.1, -0.1]) is None  # s = 1.4826 x 0.1: every |r| = 0.1 is within 0.199
    assert huber_weights([0.0, 0.0, 0.0]) is None  # no scale: the least-squares fit stands


def _location(logt):
    """One fixed cost and nothing else: the fit's estimate of a location on log t."""
    t = np.exp(np.asarray(logt, float))
    D = Design(len(t))
    D.add("fixed", "fix", np.ones(len(t)), 0.0)
    z = np.zeros(len(t))
    return lambda robust: float(fit(D.mats(), z, z, z, t, D.prior, D.smooth, robust=robust, lam=0.0)[0])


def _huber_location(x, iters=200):
    """Huber's location by its fixed point, written apart from fitting.fit: theta = sum(w x) / sum(w), w from
    the residuals x - theta (the scale from their median absolute deviation, recomputed each round), started
    from the mean; the same four reweightings fit makes, then on to convergence for the comparison below."""
    x = np.asarray(x, float)
    th = x.mean()
    for _ in range(iters):
        r = x - th
        s = 1.4826 * np.median(np.abs(r - np.median(r)))
        w = np.minimum(1.0, 1.345 * s / np.maximum(np.abs(r), 1e-300))
        th = float((w * x).sum() / w.sum())
    return th


def test_one_odd_row_moves_the_least_squares_fit_and_not_the_robust_one():
    # eight rows at log t = +-0.1 about 0 and one at 0, one row 100x slower (log 100 = 4.605):
    # least squares: the mean, 4.605 / 10 = 0.4605 (e^0.4605 = 1.585: every ordinary row 37 % fast)
    x = [-0.1, 0.1] * 4 + [0.0, math.log(100)]
    loc = _location(x)
    assert loc(False) == pytest.approx(math.log(100) / 10, abs=1e-6)
    robust = loc(True)
    assert abs(robust) < 0.06  # within 6 % of the ordinary rows' centre
    # and at the M-estimate's own fixed point (0.02216: the scale s = 1.4826 x 0.1 = 0.148, the odd row's weight
    # k s / |r| = 1.345 x 0.148 / 4.583 = 0.0435), which four reweightings reach here
    assert robust == pytest.approx(_huber_location(x), abs=1e-6)


def test_tails_on_both_sides_weigh_less_and_leave_the_centre():
    # rows symmetric about 0.3 with a tail on each side: residuals from 0.3 of -0.3, 0.3, -0.05, 0.05, -0.02, 0.02
    # and 0, median absolute deviation 0.05, s = 0.0741, k s = 0.0997; the two tails weigh 0.0997 / 0.3 = 0.332
    # each, alike, so the weighted mean stays at 0.3 (and the reweighting does run: weights below 1)
    x = [0.0, 0.6, 0.25, 0.35, 0.28, 0.32, 0.3]
    w = huber_weights(np.array(x) - 0.3)
    assert w == pytest.approx([0.3323, 0.3323, 1, 1, 1, 1, 1], abs=1e-4)
    loc = _location(x)
    assert loc(False) == pytest.approx(0.3, abs=1e-6)
    assert loc(True) == pytest.approx(0.3, abs=1e-6)
