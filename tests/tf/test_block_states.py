"""test_block_states.py: the state interval of the saved states (docs/design-block-states.md):
the op's state_interval attr, the count the gradient reads it from, save_block_states in
selective_scan and the layers. CPU here; test_gpu.py runs save_block_states on a GPU."""
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
import scan_reference as ref
from conftest import GRAD_BAR, to_tf
from scanforge_tf.ops import _ops

INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "h0")


def _op_inputs(t):
    return [t[k] for k in INPUTS]


def _flags(t):
    return dict(delta_softplus=True, has_D=True, has_z=True, has_delta_bias=True, has_h0=True)


@pytest.mark.parametrize("interval", [4, 8, 64])
def test_saved_states_at_an_interval_and_the_gradient_that_reads_them(interval, rng):
    """The forward saves ceil(L / interval) states; the gradient, given them, finds the
    interval from their count and matches the gradient from the default interval's."""
    p = ref.random_problem(rng, 2, 4, 300, 8, groups=2, h0=True)
    t, exact = to_tf(p, "float32")
    dout = tf.constant(rng.standard_normal(p["u"].shape), tf.float32)
    no_last = tf.zeros([0], tf.float32)
    grads = {}
    for k in (0, interval):
        out, _, saved = _ops.mamba_selective_scan(*_op_inputs(t), state_interval=k, **_flags(t))
        assert saved.shape == (2, 4, -(-300 // (k or 512)), 8)
        grads[k] = _ops.mamba_selective_scan_grad(*_op_inputs(t), saved, dout, no_last,
                                                  has_d_last_state=False, **_flags(t))
    ref_grads = ref.backward(exact, dout.numpy().astype(np.float64))
    for name, g0, gk in zip(INPUTS, grads[0], grads[interval]):
        np.testing.assert_allclose(gk.numpy(), g0.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
        assert ref.relerr(tf.cast(gk, tf.float64), ref_grads[name]) <= GRAD_BAR["float32"], name


def test_shape_inference_knows_the_count_unless_the_device_chooses():
    """state_interval = 8: (batch, dim, ceil(L / 8), N) at graph construction; -1 (the
    backward's block interval, chosen when the op runs): that axis unknown."""
    spec = {"u": tf.TensorSpec([2, 4, 100], tf.float32), "A": tf.TensorSpec([4, 8], tf.float32),
            "B": tf.TensorSpec([2, 8, 100], tf.float32)}
    shapes = {}
    for k in (8, -1, 0):
        @tf.function(input_signature=[spec["u"], spec["A"], spec["B"]])
        def saved_shape(u, A, B, k=k):
            empty = tf.zeros([0])
            return _ops.mamba_selective_scan(u, u, A, B, B, empty, empty, empty, empty, state_interval=k)[2]
        shapes[k] = saved_shape.get_concrete_function().structured_outputs.shape.as_list()
    assert shapes[8] == [2, 4, 13, 8]
    assert shapes[-1] == [2, 4, None, 8]
    assert shapes[0] == [2, 4, 1, 8]


@pytest.mark.parametrize("bad", [3, 6, 1024])
def test_a_bad_interval_is_refused_naming_it(bad, rng):
    p = ref.random_problem(rng, 1, 2, 300, 4, h0=True)
    t, _ = to_tf(p, "float32")
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="state_interval"):
        _ops.mamba_selective_scan(*_op_inputs(t), state_interval=bad, **_flags(t))


def test_the_gradient_refuses_a_count_no_interval_gives(rng):
    p = ref.random_problem(rng, 1, 2, 300, 4, h0=True)
    t, _ = to_tf(p, "float32")
    dout = tf.zeros(p["u"].shape, tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="saved_states"):
        _ops.mamba_selective_scan_grad(*_op_inputs(t), tf.zeros([1, 2, 7, 4]), dout, tf.zeros([0]),
                                       has_d_last_state=False, **_flags(t))


def test_save_block_states_changes_no_result(rng):
    """selective_scan(save_block_states=True) gives the default's output and gradients."""
    p = ref.random_problem(rng, 2, 8, 200, 16, groups=2, h0=True)
    t, _ = to_tf(p, "float32")
    sources = {k: t[k] for k in INPUTS}
    results = []
    for save in (False, True):
        with tf.GradientTape() as tape:
            tape.watch(list(sources.values()))
            out = scanforge_tf.selective_scan(
                t["u"], t["delta"], t["A"], t["B"], t["C"], D=t["D"], z=t["z"], delta_bias=t["delta_bias"],
                delta_softplus=True, initial_state=t["h0"], save_block_states=save)
            loss = tf.reduce_sum(out ** 2)
        results.append((out, tape.gradient(loss, sources)))
    np.testing.assert_allclose(results[1][0].numpy(), results[0][0].numpy(), rtol=1e-5, atol=1e-6)
    for name in INPUTS:
        np.testing.assert_allclose(results[1][1][name].numpy(), results[0][1][name].numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_layers_keep_save_block_states_in_their_config():
    layer = scanforge_tf.layers.SelectiveScan(delta_softplus=True, save_block_states=True)
    assert layer.get_config()["save_block_states"] is True
    assert scanforge_tf.layers.SelectiveScan.from_config(layer.get_config()).save_block_states is True
    mixer = scanforge_tf.layers.MambaVisionMixer(d_model=16, save_block_states=True)
    assert scanforge_tf.layers.MambaVisionMixer.from_config(mixer.get_config()).save_block_states is True
