"""The likelihood kernels of the Binomial cells, on exp, log1p and log that numba vectorises.

Every identified model's likelihood is, per cell of n labels with k ones, a function of the logit
eta: ``k * eta - n * softplus(eta)`` when labels are truth, and ``k log r + (n - k) log(1 - r)``
with ``r = sens * p + (1 - spec) * (1 - p)`` when they pass through the judge's errors. Written
with PyTensor's functions, two thirds of a Rasch gradient went to exp and log1p (a numba loop that
only gathers and scatters the same 5,000 cells took 15.5 of its 90 µs): the pip build of
llvmlite has no SVML, so numba calls libm one value at a time, where XLA (NumPyro) vectorises.

Here both kernels compute value and gradient from one ``e = exp(-|eta|)``:

    softplus(eta) = max(eta, 0) + log1p(e)
    sigmoid(eta)  = 1 / (1 + e)  if eta >= 0,  else  e / (1 + e)

and exp, log1p and log are plain arithmetic: a range reduction, a polynomial or an odd series,
and the binary exponent read or set through an int64 view of an array (numba offers views on
arrays only, which is why the helpers take and return arrays). LLVM then vectorises the loops with
FMA. No library gives numba vectorised transcendental functions without SVML, which is why they
are written by hand. Measured on 5,000 cells, idle: a loop of exp and log1p took 12.6 µs against
84.5 µs calling libm; the Rasch log density with gradient takes 47.1 µs against 150.1 µs, and
84.0 µs against 547.5 µs with the judge's errors (benchmarks/bench_gradient.py). Accuracy against an extended-precision reference: about two
units in the last place (tests/methods/rasch/irt/test_logit_kernel.py).

Every function uses ``error_model="numpy"`` (numba's ZeroDivisionError check alone stops LLVM from
vectorising a division) and the ``contract`` fast-math flag only (FMA, nothing that could reorder
the exact steps of a range reduction). The kernels and the functions they call share this file on
purpose: numba's on-disk cache checks only the file of the function it compiled, so a helper in
another file could change under a stale cached kernel. PyTensor's cache key of the Ops hashes
this file (logit_ops.kernel_cache_key), so any change here compiles the model functions afresh.
"""

from __future__ import annotations

import numba
import numpy as np

_OPTIONS = {"error_model": "numpy", "fastmath": {"contract"}, "cache": True}
# exp(-708) is the smallest power of e that is still a normal double; past it the result is held
# at that value, which moves a softplus or a sigmoid by less than 1e-307.
LARGEST_EXPONENT = 708.0
_LOG2E = 1.4426950408889634
# ln 2 split so that n * _LN2_HIGH is exact for every |n| < 2048 (fdlibm's constants).
_LN2_HIGH = 6.93147180369123816490e-01
_LN2_LOW = 1.90821492927058770002e-10
_EXPONENT_BIAS = 1023
_MANTISSA_BITS = 52
_MANTISSA_MASK = (1 << _MANTISSA_BITS) - 1
_EXPONENT_MASK = 0x7FF
_SQRT2 = 1.4142135623730951
_SMALLEST_NORMAL = 2.2250738585072014e-308
_TWO_TO_54 = 18014398509481984.0


@numba.njit(**_OPTIONS)
def exp_minus_abs(values: np.ndarray) -> np.ndarray:
    """exp(-|x|) per element, in (0, 1]; NaN elements give 1 (callers must carry NaN on)."""
    size = values.shape[0]
    mantissa = np.empty(size)
    exponent_bits = np.empty(size, dtype=np.int64)
    for i in range(size):
        magnitude = min(abs(values[i]), LARGEST_EXPONENT)
        if magnitude != magnitude:
            magnitude = 0.0
        halvings = np.floor(magnitude * _LOG2E + 0.5)
        x = halvings * _LN2_HIGH - magnitude + halvings * _LN2_LOW  # -(reduced), |x| <= ln2/2
        # Taylor to degree 13: the remainder is below 4e-18 relative on |x| <= ln 2 / 2.
        poly = 1.0 / 6227020800.0
        poly = poly * x + 1.0 / 479001600.0
        poly = poly * x + 1.0 / 39916800.0
        poly = poly * x + 1.0 / 3628800.0
        poly = poly * x + 1.0 / 362880.0
        poly = poly * x + 1.0 / 40320.0
        poly = poly * x + 1.0 / 5040.0
        poly = poly * x + 1.0 / 720.0
        poly = poly * x + 1.0 / 120.0
        poly = poly * x + 1.0 / 24.0
        poly = poly * x + 1.0 / 6.0
        poly = poly * x + 0.5
        poly = poly * x + 1.0
        mantissa[i] = poly * x + 1.0
        exponent_bits[i] = (_EXPONENT_BIAS - np.int64(halvings)) << _MANTISSA_BITS
    return mantissa * exponent_bits.view(np.float64)


@numba.njit(inline="always", **_OPTIONS)
def two_atanh(s: float) -> float:
    """2 atanh(s) = log((1 + s) / (1 - s)) for |s| <= 1/3, as the odd series to s^35.

    The next term is below 1e-17 of the sum, and the series is relatively accurate down to the
    smallest s. log1p and log both reduce to it.
    """
    s2 = s * s
    series = 1.0 / 35.0
    series = series * s2 + 1.0 / 33.0
    series = series * s2 + 1.0 / 31.0
    series = series * s2 + 1.0 / 29.0
    series = series * s2 + 1.0 / 27.0
    series = series * s2 + 1.0 / 25.0
    series = series * s2 + 1.0 / 23.0
    series = series * s2 + 1.0 / 21.0
    series = series * s2 + 1.0 / 19.0
    series = series * s2 + 1.0 / 17.0
    series = series * s2 + 1.0 / 15.0
    series = series * s2 + 1.0 / 13.0
    series = series * s2 + 1.0 / 11.0
    series = series * s2 + 1.0 / 9.0
    series = series * s2 + 1.0 / 7.0
    series = series * s2 + 1.0 / 5.0
    series = series * s2 + 1.0 / 3.0
    return 2.0 * s * (series * s2 + 1.0)


@numba.njit(inline="always", **_OPTIONS)
def log1p_unit(e: float) -> float:
    """log(1 + e) for e in [0, 1], as 2 atanh(e / (2 + e)) with e / (2 + e) <= 1/3."""
    return two_atanh(e / (2.0 + e))


@numba.njit(**_OPTIONS)
def log_positive(values: np.ndarray) -> np.ndarray:
    """Natural log per element; 0 gives -inf, +inf gives inf, negatives and NaN give NaN.

    x = 2^k m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m - 1) / (m + 1)), where m - 1 is
    exact. Subnormal inputs are scaled by 2^54 first.
    """
    size = values.shape[0]
    scaled = np.empty(size)
    exponent = np.empty(size)
    for i in range(size):
        value = values[i]
        subnormal = value < _SMALLEST_NORMAL
        scaled[i] = value * _TWO_TO_54 if subnormal else value
        exponent[i] = -54.0 if subnormal else 0.0
    bits = scaled.view(np.int64)
    mantissa_bits = np.empty(size, dtype=np.int64)
    for i in range(size):
        exponent[i] += np.float64(((bits[i] >> _MANTISSA_BITS) & _EXPONENT_MASK) - _EXPONENT_BIAS)
        mantissa_bits[i] = (bits[i] & _MANTISSA_MASK) | (_EXPONENT_BIAS << _MANTISSA_BITS)
    mantissa = mantissa_bits.view(np.float64)
    result = np.empty(size)
    for i in range(size):
        m = mantissa[i]
        k = exponent[i]
        high = m > _SQRT2
        m = 0.5 * m if high else m
        k = k + 1.0 if high else k
        log_m = two_atanh((m - 1.0) / (m + 1.0))  # |s| <= 0.172
        finite = k * _LN2_HIGH + (log_m + k * _LN2_LOW)
        value = values[i]
        special = np.nan if (value != value or value < 0.0) else value  # NaN, -x: NaN; inf: inf
        special = -np.inf if value == 0.0 else special
        result[i] = finite if (0.0 < value < np.inf) else special
    return result


@numba.njit(inline="always", **_OPTIONS)
def sigmoid_pair(eta: float, e: float) -> tuple[float, float]:
    """(sigmoid(eta), 1 - sigmoid(eta)) from e = exp(-|eta|), neither by subtraction from 1."""
    reciprocal = 1.0 / (1.0 + e)
    if eta >= 0.0:
        return reciprocal, e * reciprocal
    return e * reciprocal, reciprocal


@numba.njit(inline="always", **_OPTIONS)
def _require_equal_lengths(successes, trials, logit_p) -> None:
    size = logit_p.shape[0]
    if successes.shape[0] != size or trials.shape[0] != size:
        raise ValueError("successes, trials and logit_p must have the same length")


@numba.njit(**_OPTIONS)
def binomial_logit_terms(successes, trials, logit_p):
    """Per cell, ``k * eta - n * softplus(eta)`` and its derivative ``k - n * sigmoid(eta)``."""
    _require_equal_lengths(successes, trials, logit_p)
    size = logit_p.shape[0]
    small = exp_minus_abs(logit_p)
    logp = np.empty(size)
    gradient = np.empty(size)
    for i in range(size):
        e = small[i]
        eta = logit_p[i]
        softplus = (eta if eta >= 0.0 else 0.0) + log1p_unit(e)
        sigmoid, _ = sigmoid_pair(eta, e)
        logp[i] = successes[i] * eta - trials[i] * softplus  # NaN eta: carried by k * eta
        slope = successes[i] - trials[i] * sigmoid
        gradient[i] = slope if eta == eta else eta  # sigmoid(NaN) came out finite
    return logp, gradient


@numba.njit(**_OPTIONS)
def misclassified_logit_terms(successes, trials, logit_p, sensitivity, specificity):
    """Per cell, the log density of k judge ones in n labels, and its derivatives.

    The judge says 1 with probability r = sens * p + (1 - spec) * q and 0 with probability
    1 - r = spec * q + (1 - sens) * p (p = sigmoid(eta), q = 1 - p, both from one exp), each a
    sum of non-negative terms, so neither loses precision near 0 or 1. With
    w = k / r - (n - k) / (1 - r), the derivatives are w (sens + spec - 1) p q in eta, w p in
    sensitivity and -w q in specificity. Returns (log density, d eta, d sens, d spec) per cell.
    """
    _require_equal_lengths(successes, trials, logit_p)
    size = logit_p.shape[0]
    small = exp_minus_abs(logit_p)
    one_minus_sensitivity = 1.0 - sensitivity
    one_minus_specificity = 1.0 - specificity  # exact for specificity >= 1/2 (Sterbenz)
    p = np.empty(size)
    q = np.empty(size)
    judged_one = np.empty(size)
    judged_zero = np.empty(size)
    for i in range(size):
        p[i], q[i] = sigmoid_pair(logit_p[i], small[i])
        judged_one[i] = sensitivity * p[i] + one_minus_specificity * q[i]
        judged_zero[i] = specificity * q[i] + one_minus_sensitivity * p[i]
    log_one = log_positive(judged_one)
    log_zero = log_positive(judged_zero)
    logp = np.empty(size)
    d_logit = np.empty(size)
    d_sensitivity = np.empty(size)
    d_specificity = np.empty(size)
    for i in range(size):
        ones = successes[i]
        zeros = trials[i] - ones
        # A cell without ones (or zeros) must not multiply 0 by a log of 0.
        logp[i] = ((ones * log_one[i] if ones != 0 else 0.0)
                   + (zeros * log_zero[i] if zeros != 0 else 0.0))
        weight = ((ones / judged_one[i] if ones != 0 else 0.0)
                  - (zeros / judged_zero[i] if zeros != 0 else 0.0))
        d_logit[i] = weight * (sensitivity - one_minus_specificity) * p[i] * q[i]
        d_sensitivity[i] = weight * p[i]
        d_specificity[i] = -weight * q[i]
        if logit_p[i] != logit_p[i]:  # p and q of a NaN came out finite
            nan = logit_p[i]
            logp[i] = nan
            d_logit[i] = nan
            d_sensitivity[i] = nan
            d_specificity[i] = nan
    return logp, d_logit, d_sensitivity, d_specificity
