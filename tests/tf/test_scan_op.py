"""test_scan_op.py: selective_scan and every gradient against the float64 reference, on CPU, per dtype."""
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
import scan_reference as ref
from conftest import FWD_BAR, GRAD_BAR, to_tf

# (batch, dim, L, N) and flags: L = 1, groups, fixed B/C, every optional input, several
# saved states (L = 600 > 512), the largest N.
CASES = {
    "L1": dict(batch=2, dim=4, L=1, N=3),
    "groups2": dict(batch=2, dim=6, L=7, N=8, groups=2),
    "groups4_h0": dict(batch=1, dim=8, L=49, N=16, groups=4, h0=True),
    "fixedBC_nogate": dict(batch=2, dim=4, L=33, N=5, B_var=False, C_var=False, z=False),
    "fixedB_plain": dict(batch=2, dim=4, L=20, N=4, B_var=False, D=False, delta_bias=False, softplus=False),
    "fixedC_h0": dict(batch=3, dim=2, L=9, N=2, C_var=False, h0=True, z=False),
    "long": dict(batch=1, dim=3, L=600, N=4, groups=3),
    "N256": dict(batch=1, dim=2, L=5, N=256),
}


def random_cases(count, seed=5):
    """A few shapes drawn at random (fixed seed, so a failure reproduces)."""
    rng = np.random.default_rng(seed)
    cases = {}
    for i in range(count):
        groups = int(rng.choice([1, 2, 3]))
        case = dict(batch=int(rng.integers(1, 4)), dim=groups * int(rng.integers(1, 4)),
                    L=int(rng.choice([1, 2, 13, 64, 65, 196])), N=int(rng.integers(1, 17)), groups=groups)
        for flag in ("B_var", "C_var", "D", "z", "delta_bias", "softplus", "h0"):
            case[flag] = bool(rng.integers(0, 2))
        cases[f"random{i}"] = case
    return cases


CASES.update(random_cases(4))
INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "h0")


def run(t, return_last_state=True):
    return scanforge_tf.selective_scan(
        t["u"], t["delta"], t["A"], t["B"], t["C"], D=t["D"], z=t["z"], delta_bias=t["delta_bias"],
        delta_softplus=t["softplus"], return_last_state=return_last_state, initial_state=t["h0"])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_forward_and_gradients(case, dtype, rng):
    p = ref.random_problem(rng, **CASES[case])
    t, exact = to_tf(p, dtype)
    t["softplus"] = p["softplus"]
    T = t["u"].dtype
    W = tf.cast(tf.constant(rng.standard_normal(t["u"].shape), tf.float32), T)
    V = tf.constant(rng.standard_normal((p["u"].shape[0], p["u"].shape[1], p["A"].shape[1])), tf.float32)
    sources = {k: t[k] for k in INPUTS if t[k] is not None}
    with tf.GradientTape() as tape:
        tape.watch(list(sources.values()))
        out, last_state = run(t)
    grads = tape.gradient([out, last_state], sources, output_gradients=[W, V])

    ref_out, ref_last, _ = ref.forward(exact)
    assert out.dtype == T and out.shape == p["u"].shape
    assert last_state.dtype == tf.float32 and last_state.shape == V.shape
    assert ref.relerr(tf.cast(out, tf.float64), ref_out) <= FWD_BAR[dtype]
    assert ref.relerr(last_state, ref_last) <= FWD_BAR[dtype]

    ref_grads = ref.backward(exact, tf.cast(W, tf.float64).numpy(), V.numpy().astype(np.float64))
    for name, x in sources.items():
        g = grads[name]
        assert g is not None, name
        assert g.dtype == x.dtype and g.shape == x.shape, name
        err = ref.relerr(tf.cast(g, tf.float64), ref_grads[name])
        assert err <= GRAD_BAR[dtype], f"d{name}: relative error {err:.3g}"


def test_reference_backward_matches_finite_differences(rng):
    """The reference's hand-written backward is itself checked against its forward."""
    p = ref.random_problem(rng, 2, 4, 6, 3, groups=2, h0=True, B_var=False)
    dout = rng.standard_normal(p["u"].shape)
    grads = ref.backward(p, dout)
    eps = 1e-6
    for name in INPUTS:
        x = p[name]
        idx = tuple(rng.integers(0, s) for s in x.shape)
        plus, minus = dict(p), dict(p)
        plus[name], minus[name] = x.copy(), x.copy()
        plus[name][idx] += eps
        minus[name][idx] -= eps
        numeric = (np.sum(ref.forward(plus)[0] * dout) - np.sum(ref.forward(minus)[0] * dout)) / (2 * eps)
        assert abs(numeric - grads[name][idx]) <= 1e-6 * max(1.0, abs(numeric)), name


def test_return_value_matches_selective_scan_fn(rng):
    p = ref.random_problem(rng, 1, 2, 5, 3)
    t, _ = to_tf(p, "float32")
    out = scanforge_tf.selective_scan(t["u"], t["delta"], t["A"], t["B"], t["C"])
    assert isinstance(out, tf.Tensor) and out.shape == (1, 2, 5)
    pair = scanforge_tf.selective_scan(t["u"], t["delta"], t["A"], t["B"], t["C"], return_last_state=True)
    assert isinstance(pair, tuple) and len(pair) == 2 and pair[1].shape == (1, 2, 3)
    np.testing.assert_array_equal(pair[0].numpy(), out.numpy())


def test_three_dimensional_B_and_C_are_one_group(rng):
    p = ref.random_problem(rng, 2, 4, 7, 3, groups=1)
    t, exact = to_tf(p, "float32")
    B3, C3 = t["B"][:, 0], t["C"][:, 0]
    with tf.GradientTape() as tape:
        tape.watch([B3, C3])
        out = scanforge_tf.selective_scan(t["u"], t["delta"], t["A"], B3, C3, D=t["D"], z=t["z"],
                                          delta_bias=t["delta_bias"], delta_softplus=True)
    dB, dC = tape.gradient(out, [B3, C3])
    assert dB.shape == B3.shape and dC.shape == C3.shape
    assert ref.relerr(out, ref.forward(exact)[0]) <= 1e-5
    # The op takes (batch, N, L) itself: the same numbers as (batch, 1, N, L).
    B4, C4 = t["B"], t["C"]
    with tf.GradientTape() as tape:
        tape.watch([B4, C4])
        out4 = scanforge_tf.selective_scan(t["u"], t["delta"], t["A"], B4, C4, D=t["D"], z=t["z"],
                                           delta_bias=t["delta_bias"], delta_softplus=True)
    dB4, dC4 = tape.gradient(out4, [B4, C4])
    np.testing.assert_array_equal(out.numpy(), out4.numpy())
    np.testing.assert_array_equal(dB.numpy(), dB4.numpy()[:, 0])
    np.testing.assert_array_equal(dC.numpy(), dC4.numpy()[:, 0])


@pytest.mark.parametrize("name", ["u", "delta", "A", "B", "C", "D", "z", "delta_bias", "h0"])
def test_numerical_gradient(name, rng):
    """tf.test.compute_gradient through a float64 wrapper of the float32 op."""
    p = ref.random_problem(rng, 1, 2, 4, 3, groups=1, h0=True)
    t, _ = to_tf(p, "float32")

    def f(x):
        inputs = dict(t)
        inputs[name] = tf.cast(x, tf.float32)
        out, last = scanforge_tf.selective_scan(
            inputs["u"], inputs["delta"], inputs["A"], inputs["B"], inputs["C"], D=inputs["D"], z=inputs["z"],
            delta_bias=inputs["delta_bias"], delta_softplus=True, return_last_state=True,
            initial_state=inputs["h0"])
        return tf.concat([tf.reshape(tf.cast(out, tf.float64), [-1]), tf.reshape(tf.cast(last, tf.float64), [-1])], 0)

    x0 = tf.cast(t[name], tf.float64)
    theoretical, numerical = tf.test.compute_gradient(f, [x0], delta=1e-3)
    assert np.abs(theoretical[0]).max() > 0, "the gradient should not vanish"
    np.testing.assert_allclose(theoretical[0], numerical[0], rtol=2e-2, atol=2e-3)
