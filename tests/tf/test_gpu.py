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
