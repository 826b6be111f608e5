"""test_xla.py: the op has no XLA kernel; under jit_compile=True the wrapper says what to do
(docs/design-tf-xla.md), and the layers keep Keras from compiling them with XLA."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
from scanforge_tf.layers import MambaVisionMixer, SelectiveScan

batch, dim, L, N = 2, 4, 6, 3


def inputs():
    rng = np.random.default_rng(5)
    f = lambda *s: tf.constant(rng.standard_normal(s), tf.float32)
    return f(batch, dim, L), f(batch, dim, L), -tf.exp(f(dim, N)), f(batch, N, L), f(batch, N, L)


def test_jit_compiled_function_gets_a_message_that_says_what_to_do():
    u, delta, A, B, C = inputs()

    @tf.function(jit_compile=True)
    def compiled(u):
        return scanforge_tf.selective_scan(u, delta, A, B, C)

    with pytest.raises(tf.errors.UnimplementedError, match="jit_compile=True") as raised:
        compiled(u)
    message = str(raised.value)
    assert "no XLA kernel" in message and "jit_compile=False" in message
    assert "No registered" not in message  # not XLA's own error, raised later


def test_scan_in_an_inner_function_of_a_compiled_one_is_refused_too():
    u, delta, A, B, C = inputs()
    layer = SelectiveScan()

    @tf.function
    def inner(u):
        return layer(u, delta, A, B, C)

    @tf.function(jit_compile=True)
    def outer(u):
        return inner(u) * 2.0

    with pytest.raises(tf.errors.UnimplementedError, match="no XLA kernel"):
        outer(u)


def test_graph_without_xla_and_xla_around_the_scan_work(full_cuda_work_on_cpu):
    u, delta, A, B, C = inputs()
    expected = scanforge_tf.selective_scan(2.0 * u, delta, A, B, C)
    doubled = tf.function(lambda x: 2.0 * x, jit_compile=True)  # XLA for the parts around it
    graph = tf.function(lambda x: scanforge_tf.selective_scan(x, delta, A, B, C))
    np.testing.assert_allclose(graph(doubled(u)).numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)


def test_keras_model_asked_for_jit_compile_runs_without_it(full_cuda_work_on_cpu):
    """The layers set supports_jit = False: Keras warns and trains without XLA."""
    model = keras.Sequential([keras.Input((8, 16)), MambaVisionMixer(16, d_state=4),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
    with pytest.warns(UserWarning, match="jit_compile"):
        model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    assert model.jit_compile is False
    x = np.random.default_rng(0).standard_normal((4, 8, 16)).astype(np.float32)
    loss = model.train_on_batch(x, np.zeros((4, 1), np.float32))
    assert np.isfinite(loss)
