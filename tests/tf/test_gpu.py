"""test_gpu.py: the GPU kernels against the CPU ones (skipped where TensorFlow sees no GPU)."""
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
import scan_reference as ref
from conftest import FWD_BAR, GRAD_BAR, to_tf

pytestmark = pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="TensorFlow sees no GPU")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpu_matches_reference(dtype, rng):
    p = ref.random_problem(rng, 2, 64, 196, 8, groups=2, h0=True)
    dout = rng.standard_normal(p["u"].shape)
    with tf.device("/GPU:0"):
        t, exact = to_tf(p, dtype)
        W = tf.cast(tf.constant(dout, tf.float32), t["u"].dtype)
        sources = {k: t[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "h0")}
        with tf.GradientTape() as tape:
            tape.watch(list(sources.values()))
            out = scanforge_tf.selective_scan(
                t["u"], t["delta"], t["A"], t["B"], t["C"], D=t["D"], z=t["z"], delta_bias=t["delta_bias"],
                delta_softplus=True, initial_state=t["h0"])
        grads = tape.gradient(out, sources, output_gradients=W)
    assert "GPU" in out.device
    assert ref.relerr(tf.cast(out, tf.float64), ref.forward(exact)[0]) <= FWD_BAR[dtype]
    ref_grads = ref.backward(exact, tf.cast(W, tf.float64).numpy())
    for name, g in grads.items():
        assert ref.relerr(tf.cast(g, tf.float64), ref_grads[name]) <= GRAD_BAR[dtype], name


def test_gpu_deterministic_gradients_repeat_bitwise(rng):
    """deterministic=True: five GPU backward calls give the same bits (atomics would not:
    dA, dB, dC, dD and ddelta_bias are sums over many blocks)."""
    p = ref.random_problem(rng, 4, 128, 2048, 16, groups=1, h0=False)
    with tf.device("/GPU:0"):
        t, _ = to_tf(p, "bfloat16")
        sources = {k: t[k] for k in ("u", "delta", "A", "B", "C", "D", "delta_bias")}
        runs = []
        for _ in range(5):
            with tf.GradientTape() as tape:
                tape.watch(list(sources.values()))
                out = scanforge_tf.selective_scan(
                    t["u"], t["delta"], t["A"], t["B"], t["C"], D=t["D"], z=t["z"],
                    delta_bias=t["delta_bias"], delta_softplus=True, deterministic=True)
                loss = tf.reduce_sum(tf.cast(out, tf.float32) ** 2)
            grads = tape.gradient(loss, sources)
            runs.append({k: g.numpy().tobytes() for k, g in grads.items()})
    for run in runs[1:]:
        assert run == runs[0]
