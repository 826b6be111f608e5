"""fit_exp2.py: the coefficients of runtime/cpu/cpu_vec.h's 2^r polynomial, for |r| <= 1/2.

    python3 scripts/fit_exp2.py

p(r) = 1 + c1 r + ... + c6 r^6. c1 is ln 2 rounded to float; then each next coefficient is
fitted (with the later ones free) for least maximum relative error, by least squares on
Chebyshev nodes reweighted toward the largest errors (Lawson's method), and rounded to
float before the next is fitted. Prints the coefficients as C hex floats and the largest
relative error of the float coefficients, evaluated in double.
"""
import numpy as np

DEGREE, NODES = 6, 4000


def main():
    r = 0.5 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    f = np.exp2(r)
    coeffs = [float(np.float32(np.log(2)))]
    for k in range(2, DEGREE + 1):
        fixed = 1 + sum(c * r ** (i + 1) for i, c in enumerate(coeffs))
        X = np.stack([r ** j for j in range(k, DEGREE + 1)], 1)
        w = np.ones(NODES)
        for _ in range(300):
            scale = w / f  # relative error
            c, *_ = np.linalg.lstsq(X * scale[:, None], (f - fixed) * scale, rcond=None)
            err = (fixed + X @ c - f) / f
            w = w * np.sqrt(np.abs(err)) + 1e-30
            w /= w.sum()
        coeffs.append(float(np.float32(c[0])))
    x = np.linspace(-0.5, 0.5, 200001)
    p = np.zeros_like(x)
    for c in reversed(coeffs):
        p = p * x + c
    p = p * x + 1
    print("coefficients c1..c6:", ", ".join(c.hex() for c in coeffs))
    print("largest relative error:", np.max(np.abs(p / np.exp2(x) - 1)))


if __name__ == "__main__":
    main()
