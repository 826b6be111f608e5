"""tf_eager_overhead.py: the Python wrapper's cost per eager call, against the bare generated op.

    python3 bench/tf_eager_overhead.py [--calls 2000] [--reps 7]

Tiny shapes (batch 1, dim 4, L 8, N 4), so the scan itself costs next to nothing and what
is left is the per-call work: `scanforge_tf.selective_scan(u, delta, A, B, C)` against
`_ops.mamba_selective_scan(...)` given the same tensors with the empty optional inputs made
once beforehand, and the same two with D, z and delta_bias present. Each figure is the
median over --reps of the mean over --calls eager calls, in microseconds; the ratio is
the median of the reps' ratios.
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import scanforge_tf  # noqa: E402
from scanforge_tf import ops  # noqa: E402


def mean_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def compare(wrapped, bare, calls, reps):
    """Medians of the wrapper's and the bare op's mean call, and of their ratio; the two
    alternate within each rep so that the machine's load drifts over both alike."""
    wrapped(), bare()  # the first calls make the kernel and the cached empties
    w, b = [], []
    for _ in range(reps):
        w.append(mean_call_us(wrapped, calls))
        b.append(mean_call_us(bare, calls))
    ratio = statistics.median(x / y for x, y in zip(w, b))
    return statistics.median(w), statistics.median(b), ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()

    batch, dim, L, N = 1, 4, 8, 4
    u, delta, z = (tf.random.normal([batch, dim, L]) for _ in range(3))
    A = -tf.exp(tf.random.normal([dim, N]))
    B, C = tf.random.normal([batch, N, L]), tf.random.normal([batch, N, L])
    D, bias = tf.ones([dim]), tf.zeros([dim])
    empty_f32, empty_act = tf.zeros([0]), tf.zeros([0])
    raw = ops._ops.mamba_selective_scan

    cases = {
        "no optional inputs": (
            lambda: scanforge_tf.selective_scan(u, delta, A, B, C),
            lambda: raw(u, delta, A, B, C, empty_f32, empty_act, empty_f32, empty_f32)),
        "D, z, delta_bias, softplus": (
            lambda: scanforge_tf.selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=bias,
                                                delta_softplus=True),
            lambda: raw(u, delta, A, B, C, D, z, bias, empty_f32, delta_softplus=True,
                        has_D=True, has_z=True, has_delta_bias=True)),
    }
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, shapes batch={batch} dim={dim} "
          f"L={L} N={N}, {args.calls} calls x {args.reps} reps")
    print(f"{'case':<28} {'wrapper us':>11} {'bare op us':>11} {'ratio':>6}")
    for name, (wrapped, bare) in cases.items():
        w, b, ratio = compare(wrapped, bare, args.calls, args.reps)
        print(f"{name:<28} {w:>11.1f} {b:>11.1f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
