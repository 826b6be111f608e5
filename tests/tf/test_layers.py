"""test_layers.py: MambaVisionMixer against a pure-TensorFlow float64 mixer, SelectiveScan, fit, saving.
SelectiveScan alone runs on the CPU and the GPU; the tests with Dense or Conv1D run on the CPU
on a GPU machine unless SCANFORGE_TEST_GPU_LAYERS=1 (conftest.full_cuda_work_on_cpu)."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
from scanforge_tf.layers import MambaVisionMixer, SelectiveScan
from conftest import DEVICES
from scan_reference import relerr

pytestmark = pytest.mark.usefixtures("full_cuda_work_on_cpu")


def torch_state_dict(rng, d_model, d_state, d_conv, expand):
    """Random weights in PyTorch's layout and names (MambaVisionMixer's state dict)."""
    d_inner = expand * d_model
    half, rank = d_inner // 2, -(-d_model // 16)
    n = lambda *s, scale=0.3: rng.standard_normal(s) * scale
    return {
        "in_proj.weight": n(d_inner, d_model), "x_proj.weight": n(rank + 2 * d_state, half),
        "dt_proj.weight": n(half, rank), "dt_proj.bias": rng.uniform(-4.5, -2.0, half),
        "A_log": np.log(np.tile(np.arange(1, d_state + 1), (half, 1))) + n(half, d_state, scale=0.1),
        "D": 1.0 + n(half), "out_proj.weight": n(d_model, d_inner),
        "conv1d_x.weight": n(half, 1, d_conv), "conv1d_z.weight": n(half, 1, d_conv),
    }


def reference_mixer(hidden, w, d_state):
    """The published mixer's math in float64 TensorFlow ops, with tf.scan for the scan."""
    f = lambda k: tf.constant(w[k], tf.float64)
    half = w["D"].shape[0]
    rank = w["dt_proj.weight"].shape[1]

    def conv_same(x, weight):  # x (b, c, L); weight (c, 1, k); PyTorch's 'same' padding
        k = weight.shape[-1]
        left = (k - 1) // 2
        xp = tf.pad(x, [[0, 0], [0, 0], [left, k - 1 - left]])
        L = x.shape[-1]
        return sum(weight[None, :, 0, j, None] * xp[:, :, j:j + L] for j in range(k))

    xz = tf.transpose(tf.matmul(hidden, f("in_proj.weight"), transpose_b=True), [0, 2, 1])  # (b, d, L)
    x, z = xz[:, :half], xz[:, half:]
    x = tf.nn.silu(conv_same(x, f("conv1d_x.weight")))
    z = tf.nn.silu(conv_same(z, f("conv1d_z.weight")))
    x_dbl = tf.matmul(tf.transpose(x, [0, 2, 1]), f("x_proj.weight"), transpose_b=True)  # (b, L, R+2N)
    dt, B, C = x_dbl[..., :rank], x_dbl[..., rank:rank + d_state], x_dbl[..., rank + d_state:]
    dt = tf.matmul(dt, f("dt_proj.weight"), transpose_b=True) + f("dt_proj.bias")  # (b, L, d)
    dt = tf.nn.softplus(dt + f("dt_proj.bias"))  # delta_bias: the bias a second time
    A = -tf.exp(f("A_log"))
    u = tf.transpose(x, [0, 2, 1])  # (b, L, d)

    def step(h, inputs):
        dt_t, u_t, B_t, C_t = inputs  # (b, d), (b, d), (b, N), (b, N)
        h = tf.exp(dt_t[..., None] * A) * h + (dt_t * u_t)[..., None] * B_t[:, None, :]
        return h

    time_major = lambda t: tf.transpose(t, [1, 0, 2])
    b = hidden.shape[0]
    hs = tf.scan(step, (time_major(dt), time_major(u), time_major(B), time_major(C)),
                 initializer=tf.zeros([b, half, d_state], tf.float64))  # (L, b, d, N)
    y = tf.einsum("lbdn,lbn->bld", hs, time_major(C)) + u * f("D")
    y = tf.concat([y, tf.transpose(z, [0, 2, 1])], axis=-1)
    return tf.matmul(y, f("out_proj.weight"), transpose_b=True)


def test_mixer_matches_the_published_math():
    rng = np.random.default_rng(3)
    d_model, d_state, d_conv, expand, L = 32, 8, 3, 1, 49
    w = torch_state_dict(rng, d_model, d_state, d_conv, expand)
    mixer = MambaVisionMixer(d_model, d_state=d_state, d_conv=d_conv, expand=expand)
    mixer.load_torch_state_dict(w)
    hidden = rng.standard_normal((2, L, d_model))
    h32, h64 = tf.constant(hidden, tf.float32), tf.constant(hidden, tf.float64)

    with tf.GradientTape() as tape:
        tape.watch(h32)
        out = mixer(h32)
        loss = tf.reduce_sum(tf.sin(out))
    grad = tape.gradient(loss, h32)
    with tf.GradientTape() as tape:
        tape.watch(h64)
        ref = reference_mixer(h64, w, d_state)
        ref_loss = tf.reduce_sum(tf.sin(ref))
    ref_grad = tape.gradient(ref_loss, h64)
    assert out.shape == (2, L, d_model)
    assert relerr(out, ref.numpy()) <= 1e-5
    assert relerr(grad, ref_grad.numpy()) <= 1e-4


def test_mixer_parameters_carry_the_model_names():
    mixer = MambaVisionMixer(64)
    mixer.build((None, 196, 64))
    names = {v.path.split("/", 1)[1]: tuple(v.shape) for v in mixer.weights}
    assert names == {
        "in_proj/kernel": (64, 64), "x_proj/kernel": (32, 4 + 16), "dt_proj/kernel": (4, 32),
        "dt_proj/bias": (32,), "A_log": (32, 8), "D": (32,), "out_proj/kernel": (64, 64),
        "conv1d_x/kernel": (3, 32, 1), "conv1d_z/kernel": (3, 32, 1)}
    np.testing.assert_allclose(-np.exp(mixer.A_log.numpy())[0], -np.arange(1, 9))
    assert mixer.supports_jit is False


def test_selective_scan_layer_equals_the_function():
    rng = np.random.default_rng(4)
    f = lambda *s: tf.constant(rng.standard_normal(s), tf.float32)
    u, delta, A, B, C, D = f(2, 4, 6), f(2, 4, 6), -tf.exp(f(4, 3)), f(2, 3, 6), f(2, 3, 6), f(4)
    layer = SelectiveScan(delta_softplus=True, return_last_state=True)
    out, last = layer(u, delta, A, B, C, D=D)
    ref_out, ref_last = scanforge_tf.selective_scan(u, delta, A, B, C, D=D, delta_softplus=True,
                                                    return_last_state=True)
    np.testing.assert_array_equal(out.numpy(), ref_out.numpy())
    np.testing.assert_array_equal(last.numpy(), ref_last.numpy())


# Under a mixed policy the scan runs in the compute dtype: bars against the float32 layer.
MIXED = {"mixed_bfloat16": (tf.bfloat16, 3e-2), "mixed_float16": (tf.float16, 5e-3)}


def scan_layer_run(policy, fixed_bc):
    """SelectiveScan with every optional input (fixed or variable B and C) under `policy`:
    out, last_state and the gradient of every input, as float64 arrays."""
    rng = np.random.default_rng(7)
    f = lambda *s: tf.constant(rng.standard_normal(s), tf.float32)
    args = dict(u=f(2, 8, 40), delta=f(2, 8, 40), A=-tf.exp(f(8, 4)),
                B=f(8, 4) if fixed_bc else f(2, 2, 4, 40), C=f(8, 4) if fixed_bc else f(2, 2, 4, 40),
                D=f(8), z=f(2, 8, 40), delta_bias=f(8) - 3.0, initial_state=0.1 * f(2, 8, 4))
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = SelectiveScan(delta_softplus=True, return_last_state=True)
        with tf.GradientTape() as tape:
            tape.watch(list(args.values()))
            out, last = layer(**args)
            loss = tf.reduce_sum(tf.cast(out, tf.float32) ** 2) + tf.reduce_sum(last ** 2)
        grads = tape.gradient(loss, args)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    as64 = lambda t: tf.cast(t, tf.float64).numpy()
    return out.dtype, as64(out), as64(last), {k: as64(g) for k, g in grads.items()}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fixed_bc", [False, True], ids=["variable_BC", "fixed_BC"])
@pytest.mark.parametrize("policy", list(MIXED))
def test_selective_scan_layer_under_mixed_policy(policy, fixed_bc, device):
    """Keras casts A, D, delta_bias and the state to the compute dtype under the policy;
    the layer gives the op float32 for them and low-precision activations, and matches the
    float32 layer in its outputs and every gradient (on each device)."""
    dtype, bar = MIXED[policy]
    with tf.device(device):
        _, ref_out, ref_last, ref_grads = scan_layer_run("float32", fixed_bc)
        out_dtype, out, last, grads = scan_layer_run(policy, fixed_bc)
    assert out_dtype == dtype
    assert relerr(out, ref_out) <= bar
    assert relerr(last, ref_last) <= bar
    for name, g in grads.items():
        assert np.all(np.isfinite(g)), name
        assert relerr(g, ref_grads[name]) <= 2 * bar, name


def small_model(L=16, d_model=16):
    inputs = keras.Input((L, d_model))
    x = MambaVisionMixer(d_model, d_state=4)(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def test_fit_lowers_the_loss():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16, 16)).astype(np.float32)
    y = (x[:, :8, :4].sum(axis=(1, 2)) / 4.0)[:, None].astype(np.float32)
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    assert model.jit_compile is False
    history = model.fit(x, y, batch_size=16, epochs=6, verbose=0).history["loss"]
    assert history[-1] < 0.7 * history[0], history


def test_keras_model_save_and_load(tmp_path):
    keras.utils.set_random_seed(1)
    model = small_model()
    x = np.random.default_rng(1).standard_normal((3, 16, 16)).astype(np.float32)
    expected = model(x).numpy()
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    np.testing.assert_array_equal(reloaded(x).numpy(), expected)


@pytest.mark.parametrize("policy", list(MIXED))
def test_mixer_under_mixed_policy(policy):
    """Low-precision activations, float32 A, D and delta_bias: close to the float32 layer,
    in the output and every weight's gradient."""
    dtype, bar = MIXED[policy]
    rng = np.random.default_rng(6)
    w = torch_state_dict(rng, 32, 8, 3, 1)
    x = tf.constant(rng.standard_normal((2, 49, 32)), tf.float32)

    def run():
        mixer = MambaVisionMixer(32)
        mixer.load_torch_state_dict(w)
        with tf.GradientTape() as tape:
            out = mixer(x)
            loss = tf.reduce_sum(tf.cast(out, tf.float32) ** 2)
        return out, tape.gradient(loss, mixer.trainable_variables)

    reference, ref_grads = run()
    keras.mixed_precision.set_global_policy(policy)
    try:
        out, grads = run()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert out.dtype == dtype
    assert relerr(tf.cast(out, tf.float64), reference.numpy()) <= bar
    for g, ref in zip(grads, ref_grads):
        assert g.dtype == tf.float32  # float32 weights under a mixed policy
        assert relerr(tf.cast(g, tf.float64), ref.numpy()) <= 4 * bar


def test_fit_under_mixed_float16_lowers_the_loss():
    """mixed_float16 training wraps the optimizer in Keras's LossScaleOptimizer; the scaled
    loss goes through the scan's float16 gradient and the loss still falls."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16, 16)).astype(np.float32)
    y = (x[:, :8, :4].sum(axis=(1, 2)) / 4.0)[:, None].astype(np.float32)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = small_model()
        model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        history = model.fit(x, y, batch_size=16, epochs=6, verbose=0).history["loss"]
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert np.all(np.isfinite(history))
    assert history[-1] < 0.7 * history[0], history
