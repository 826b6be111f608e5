"""tf_cpu_bench.py: the scanforge CPU op against a pure-TensorFlow tf.scan selective scan, one process.

    python3 bench/tf_cpu_bench.py [--shapes 64,160,196,8 64,320,49,8] [--reps 5] [--grad]

MambaVision's call: variable B and C (one group), D, delta_bias, softplus, no gate. Two
pure-TensorFlow baselines: "precomputed" (decays and inputs for all steps at once, the scan
only multiplies and adds) and "per-step" (docs/math.md's step transcribed: each step computes its
decay, state and output). Everything runs as tf.function graphs on the same inputs; the
median of --reps runs is reported, with the largest output difference as a check.
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import scanforge_tf  # noqa: E402


def scan_tf(u, delta, A, B, C, D, delta_bias):
    """docs/math.md's forward with tf.scan over time: the way one writes it without a kernel."""
    dt = tf.nn.softplus(delta + delta_bias[:, None])                     # (b, d, L)
    a = tf.exp(dt[:, :, None, :] * A[None, :, :, None])                  # (b, d, N, L)
    x = dt[:, :, None, :] * B[:, 0, None, :, :] * u[:, :, None, :]       # (b, d, N, L)
    time_major = lambda t: tf.transpose(t, [3, 0, 1, 2])                 # (L, b, d, N)
    h = tf.scan(lambda h, ax: ax[0] * h + ax[1], (time_major(a), time_major(x)),
                initializer=tf.zeros_like(x[..., 0]))
    y = tf.einsum("lbdn,bnl->bdl", h, C[:, 0])
    return y + D[:, None] * u


def scan_tf_per_step(u, delta, A, B, C, D, delta_bias):
    """The recurrence transcribed step by step: each step computes its decay, state and output."""
    dt = tf.nn.softplus(delta + delta_bias[:, None])
    time_major = lambda t: tf.transpose(t, [2, 0, 1])                    # (L, b, d) / (L, b, N)

    def step(carry, inputs):
        h, _ = carry
        dt_t, u_t, B_t, C_t = inputs
        h = tf.exp(dt_t[..., None] * A) * h + (dt_t * u_t)[..., None] * B_t[:, None, :]
        return h, tf.reduce_sum(h * C_t[:, None, :], axis=-1)

    h0 = tf.zeros([tf.shape(u)[0], tf.shape(u)[1], tf.shape(A)[1]])
    _, y = tf.scan(step, (time_major(dt), time_major(u), time_major(B[:, 0]), time_major(C[:, 0])),
                   initializer=(h0, h0[..., 0]))
    return tf.transpose(y, [1, 2, 0]) + D[:, None] * u


def scan_op(u, delta, A, B, C, D, delta_bias):
    return scanforge_tf.selective_scan(u, delta, A, B, C, D=D, delta_bias=delta_bias, delta_softplus=True)


def with_grad(f):
    def run(*args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = f(*args)
        return [out] + tape.gradient(out, list(args), output_gradients=tf.ones_like(out))
    return run


def median_seconds(f, args, reps):
    f(*args)  # trace and warm up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        result = f(*args)
        _ = [r.numpy() for r in (result if isinstance(result, list) else [result])]
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["64,160,196,8", "64,320,49,8", "8,160,196,8"],
                        help="batch,dim,L,N")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--grad", action="store_true", help="also time forward + backward")
    args = parser.parse_args()
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, intra-op threads "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'default'}")
    print(f"{'shape':>14} {'pass':>8} {'tf.scan':>12} {'tf.scan ms':>11} {'scanforge ms':>13} {'speed-up':>9} "
          f"{'max |diff|':>11}")
    modes = [("fwd", lambda f: f)] + ([("fwd+bwd", with_grad)] if args.grad else [])
    for shape in args.shapes:
        batch, dim, L, N = map(int, shape.split(","))
        rng = np.random.default_rng(0)
        f32 = lambda *s, scale=1.0: tf.constant(rng.standard_normal(s) * scale, tf.float32)
        inputs = (f32(batch, dim, L), f32(batch, dim, L, scale=0.5), -tf.exp(f32(dim, N, scale=0.3)),
                  f32(batch, 1, N, L), f32(batch, 1, N, L), f32(dim), f32(dim, scale=0.1) - 4.0)
        for name, wrap in modes:
            with tf.device("/CPU:0"):
                t_op, out = median_seconds(tf.function(wrap(scan_op)), inputs, args.reps)
                for baseline, f in (("precomputed", scan_tf), ("per-step", scan_tf_per_step)):
                    t_ref, ref = median_seconds(tf.function(wrap(f)), inputs, args.reps)
                    pairs = zip(ref, out) if isinstance(ref, list) else [(ref, out)]
                    diff = max(float(tf.reduce_max(tf.abs(r - o))) for r, o in pairs)
                    print(f"{shape:>14} {name:>8} {baseline:>12} {t_ref * 1e3:11.1f} {t_op * 1e3:13.1f} "
                          f"{t_ref / t_op:8.1f}x {diff:11.2e}", flush=True)


if __name__ == "__main__":
    main()
