#!/usr/bin/env python3
"""Fits the polynomial coefficients of the vectorizable float math in src/codegen/cpu/mk_cpu_rt.h
(mkrt::vexp, vexpm1, vlog, vlog1p, vtanh, verf, vlogistic).

Each polynomial approximates a smooth "remainder" function on the reduced interval the C++ code
uses; the fit is a weighted least-squares fit on Chebyshev nodes, refined by Lawson's iteration
(iteratively reweighted least squares) towards the minimax (Remez) solution of the error that
matters: the relative error of the final function value. Targets are computed with mpmath at 60
digits. The coefficients are printed rounded to float, as C++ hex-float literals, together with
the weighted max error of the rounded polynomial (in units of 2^-24, i.e. float ulps at 1).

Rerun:  python3 tools/fit_vector_math.py   (needs numpy and mpmath; takes a few seconds)
and paste the printed constants into mk_cpu_rt.h; then run the accuracy test
(ctest -R VectorMath) which checks every function over the float range.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 60
N = 3000


def cheb_nodes(a, b, n=N):
    k = np.arange(n)
    t = np.cos((2 * k + 1) * np.pi / (2 * n))
    return np.sort((a + b) / 2 + (b - a) / 2 * t)


def lawson(A, ys, w0, iters):
    lw = np.ones_like(ys)
    for _ in range(iters):  # Lawson: weights follow the error so the fit approaches equioscillation
        sw = np.sqrt(lw) * w0
        c, *_ = np.linalg.lstsq(A * sw[:, None], ys * sw, rcond=None)
        err = np.abs(A @ c - ys) * w0
        lw = lw * err
        lw /= lw.sum()
    return c, np.max(err)


def fit(name, a, b, var, target, weight, degree, iters=60, c0=None):
    """Finds c minimizing max_x weight(x) * |sum c_i var(x)^i - target(x)| over [a, b], with float
    coefficients: they are rounded one at a time, lowest order first, and the higher ones refitted
    to absorb each rounding error. `c0`: the constant coefficient is this exact value instead (the
    C++ code adds it as a float hi + lo pair)."""
    xs = cheb_nodes(a, b)
    ys = np.array([float(target(mp.mpf(float(x)))) for x in xs])
    w0 = np.array([float(weight(mp.mpf(float(x)))) for x in xs])
    A = np.vander(var(xs), degree + 1, increasing=True)
    _, err = lawson(A, ys, w0, iters)
    fixed = [] if c0 is None else [c0]
    for i in range(len(fixed), degree + 1):
        rest = ys - A[:, :i] @ np.array(fixed, dtype=np.float64) if fixed else ys
        c, _ = lawson(A[:, i:], rest, w0, iters)
        fixed.append(float(np.float32(c[0])))
    c32 = np.array(fixed, dtype=np.float32)
    c64 = c32.astype(np.float64)
    if c0 is not None:
        c64[0] = c0
        lo = np.float32(float(mp.mpf(c0) - mp.mpf(float(c32[0]))))
        print(f"// constant term {c0!r} = {float(c32[0]).hex()}f + {float(lo).hex()}f")
    err32 = np.max(np.abs(A @ c64 - ys) * w0)
    print(f"// {name}: degree {degree} on [{a:.6g}, {b:.6g}], max weighted error "
          f"{err:.3g} ({err * 2**24:.3f} x 2^-24), float coefficients {err32 * 2**24:.3f} x 2^-24")
    print("  " + ", ".join(float(x).hex().replace("0000000p", "p").replace("000000p", "p") + "f"
                          for x in c32))
    return c32


LN2_HALF = float(mp.log(2) / 2)

# exp: e^r = 1 + r + r^2 q(r), |r| <= ln2/2; error relative to e^r.
fit("exp q(r)", -LN2_HALF, LN2_HALF, lambda r: r,
    lambda r: (mp.exp(r) - 1 - r) / r**2, lambda r: r**2 / mp.exp(r), 4)
# expm1: e^r - 1 = r + r^2 q(r); error relative to e^r - 1.
fit("expm1 q(r)", -LN2_HALF, LN2_HALF, lambda r: r,
    lambda r: (mp.expm1(r) - r) / r**2, lambda r: r**2 / abs(mp.expm1(r)), 5)
# log: log(1+f) = f + f^2 Q(f), f in [2/3 - 1, 4/3 - 1]; error relative to log(1+f).
fit("log Q(f)", -1 / 3, 1 / 3, lambda f: f,
    lambda f: (mp.log1p(f) - f) / f**2, lambda f: f**2 / abs(mp.log1p(f)), 8)
# tanh, small |x|: tanh(x) = x + x^3 P(x^2); error relative to tanh(x).
TANH_SMALL = 0.625
fit("tanh P(x^2)", 0, TANH_SMALL, lambda x: x * x,
    lambda x: (mp.tanh(x) - x) / x**3, lambda x: x**3 / mp.tanh(x), 4)
# erf, small |x|: erf(x) = x P(x^2); error relative to erf(x).
ERF_SPLIT = 0.921875
fit("erf P(x^2)", 0, ERF_SPLIT, lambda x: x * x,
    lambda x: mp.erf(x) / x, lambda x: x / mp.erf(x), 6, c0=float(2 / mp.sqrt(mp.pi)))
# erf, large |x|: erf(x) = 1 - exp(-x^2 + h(x)), h = log(erfc(x)) + x^2, in t = x - ERF_MID; an
# error dh in h changes erf(x) by erfc(x) * dh, relative to erf(x).
ERF_ONE = 3.9375
ERF_MID = 2.4375
fit("erf h(x - ERF_MID)", ERF_SPLIT, ERF_ONE, lambda x: x - ERF_MID,
    lambda x: mp.log(mp.erfc(x)) + x * x, lambda x: mp.erfc(x) / mp.erf(x), 7)
