"""test_modes.py: eager, tf.function and a SavedModel reloaded in a fresh process give the same values."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

import scanforge_tf

batch, dim, L, N = 2, 4, 9, 3


def inputs():
    rng = np.random.default_rng(7)
    f32 = lambda *shape: tf.constant(rng.standard_normal(shape), tf.float32)
    return dict(u=f32(batch, dim, L), delta=f32(batch, dim, L), A=-tf.exp(f32(dim, N)),
                B=f32(batch, 2, N, L), C=f32(batch, 2, N, L), D=f32(dim), z=f32(batch, dim, L),
                delta_bias=f32(dim) - 3.0)


class ScanModule(tf.Module):
    """Forward and gradients as functions with a signature, as a SavedModel exports them."""

    def __init__(self):
        super().__init__()
        self.A = tf.Variable(inputs()["A"])

    @tf.function(input_signature=[tf.TensorSpec([None, dim, None], tf.float32)] * 3
                 + [tf.TensorSpec([None, 2, N, None], tf.float32)] * 2)
    def forward(self, u, delta, z, B, C):
        return scanforge_tf.selective_scan(u, delta, self.A, B, C, z=z, delta_softplus=True)

    @tf.function(input_signature=[tf.TensorSpec([None, dim, None], tf.float32)] * 3
                 + [tf.TensorSpec([None, 2, N, None], tf.float32)] * 2)
    def gradients(self, u, delta, z, B, C):
        with tf.GradientTape() as tape:
            tape.watch([u, delta, B])
            out = scanforge_tf.selective_scan(u, delta, self.A, B, C, z=z, delta_softplus=True)
            loss = tf.reduce_sum(out * out)
        return tape.gradient(loss, [u, delta, B, self.A])


def call_args(x):
    return x["u"], x["delta"], x["z"], x["B"], x["C"]


def test_eager_equals_tf_function():
    x = inputs()
    eager = scanforge_tf.selective_scan(**x, delta_softplus=True, return_last_state=True)
    graph = tf.function(lambda: scanforge_tf.selective_scan(**x, delta_softplus=True, return_last_state=True))()
    for e, g in zip(eager, graph):
        np.testing.assert_array_equal(e.numpy(), g.numpy())


def test_gradients_eager_equal_tf_function():
    x = inputs()

    def grads():
        with tf.GradientTape() as tape:
            tape.watch(list(x.values()))
            loss = tf.reduce_sum(tf.sin(scanforge_tf.selective_scan(**x, delta_softplus=True)))
        return tape.gradient(loss, list(x.values()))

    for e, g in zip(grads(), tf.function(grads)()):
        np.testing.assert_array_equal(e.numpy(), g.numpy())


def test_saved_model_round_trip_in_a_new_process(tmp_path):
    x = inputs()
    module = ScanModule()
    expected_out = module.forward(*call_args(x)).numpy()
    expected_grads = [g.numpy() for g in module.gradients(*call_args(x))]
    path = str(tmp_path / "scan_model")
    tf.saved_model.save(module, path)
    np.savez(tmp_path / "data.npz", out=expected_out, *expected_grads,
             **{k: v.numpy() for k, v in x.items()})
    # A fresh interpreter: only importing the package makes the op (and its gradient) known.
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf
        import scanforge_tf
        d = np.load({str(tmp_path / "data.npz")!r})
        m = tf.saved_model.load({path!r})
        args = [tf.constant(d[k]) for k in ("u", "delta", "z", "B", "C")]
        np.testing.assert_array_equal(m.forward(*args).numpy(), d["out"])
        for i, g in enumerate(m.gradients(*args)):
            np.testing.assert_array_equal(g.numpy(), d[f"arr_{{i}}"])
        with tf.GradientTape() as tape:
            tape.watch(args[0])
            y = m.forward(*args)
        assert tape.gradient(y, args[0]) is not None
        print("reloaded ok")
    """)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reloaded ok" in result.stdout


def grad_op_attr(**kwargs):
    """The `deterministic` attribute of the gradient op a traced call builds."""
    x = inputs()

    @tf.function
    def grads(u):
        with tf.GradientTape() as tape:
            tape.watch(u)
            out = scanforge_tf.selective_scan(u, x["delta"], x["A"], x["B"], x["C"], z=x["z"],
                                              delta_softplus=True, **kwargs)
        return tape.gradient(out, u)

    graph = grads.get_concrete_function(x["u"]).graph
    ops = [op for op in graph.get_operations() if op.type == "MambaSelectiveScanGrad"]
    assert len(ops) == 1
    return ops[0].get_attr("deterministic")


def test_deterministic_argument_reaches_the_gradient_op():
    assert grad_op_attr() is False
    assert grad_op_attr(deterministic=True) is True


def test_gradients_under_op_determinism_in_a_new_process():
    """enable_op_determinism is process-wide and cannot be undone: a fresh interpreter.
    The gradients run (the op neither raises nor ignores the setting) and repeat bitwise;
    on a GPU this is the library's fixed-order mode (tests/tf/test_gpu.py)."""
    script = textwrap.dedent("""
        import numpy as np, tensorflow as tf
        import scanforge_tf
        tf.config.experimental.enable_op_determinism()
        rng = np.random.default_rng(3)
        f = lambda *s: tf.constant(rng.standard_normal(s), tf.float32)
        u, delta, z, B, C = f(2, 8, 300), f(2, 8, 300), f(2, 8, 300), f(2, 1, 4, 300), f(2, 1, 4, 300)
        A = -tf.exp(f(8, 4))
        def grads():
            with tf.GradientTape() as tape:
                tape.watch([u, delta, B, C, A])
                out = scanforge_tf.selective_scan(u, delta, A, B, C, z=z, delta_softplus=True)
                loss = tf.reduce_sum(out * out)
            return [g.numpy() for g in tape.gradient(loss, [u, delta, B, C, A])]
        first, second = grads(), grads()
        for a, b in zip(first, second):
            assert a.tobytes() == b.tobytes()
        print("deterministic ok")
    """)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "deterministic ok" in result.stdout
