"""test_gpu.py: the GPU kernels against the float64 reference, deterministic gradients, and a
training step under MirroredStrategy on two GPUs (skipped where TensorFlow sees no GPU, or
fewer than two for that test). No Dense or convolution: a GPU machine whose TensorFlow
lacks cuBLAS and cuDNN (docs/device.md) runs these too."""
import numpy as np
import pytest
import tensorflow as tf

import scanforge_tf
import scan_reference as ref
from scanforge_tf.ops import _ops
from conftest import FWD_BAR, GRAD_BAR, to_tf

pytestmark = pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="TensorFlow sees no GPU")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("block_states", [False, True], ids=["default", "block_states"])
def test_gpu_matches_reference(dtype, block_states, rng):
    """Forward and every gradient. With save_block_states the forward saves every backward
    block's starting state (saved_states then hold far more than the default interval's
    count) and the gradient reads them."""
    L, N = (1000, 16) if block_states else (196, 8)
    p = ref.random_problem(rng, 2, 64, L, N, groups=1 if block_states else 2, h0=True)
    dout = rng.standard_normal(p["u"].shape)
    with tf.device("/GPU:0"):
        t, exact = to_tf(p, dtype)
        W = tf.cast(tf.constant(dout, tf.float32), t["u"].dtype)
        sources = {k: t[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "h0")}
        with tf.GradientTape() as tape:
            tape.watch(list(sources.values()))
            out = scanforge_tf.selective_scan(
                t["u"], t["delta"], t["A"], t["B"], t["C"], D=t["D"], z=t["z"], delta_bias=t["delta_bias"],
                delta_softplus=True, initial_state=t["h0"], save_block_states=block_states)
        grads = tape.gradient(out, sources, output_gradients=W)
        if block_states:
            saved = _ops.mamba_selective_scan(*sources.values(), delta_softplus=True, has_D=True, has_z=True,
                                              has_delta_bias=True, has_h0=True, state_interval=-1)[2]
            assert saved.shape[2] >= L // 16  # a state every 4-16 steps, not the default's every 512
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


def _scan_loss(x, w_u, w_dt, A_log, D, B, C, global_batch):
    """A model made of elementwise ops and the scan only: u and delta are x scaled per
    channel, A = -exp(A_log). The mean of out**2 over the global batch."""
    out = scanforge_tf.selective_scan(x * w_u[:, None], x * w_dt[:, None], -tf.exp(A_log), B, C, D=D,
                                      delta_softplus=True)
    return tf.reduce_sum(out ** 2) / global_batch


@pytest.mark.skipif(len(tf.config.list_physical_devices("GPU")) < 2, reason="needs two GPUs")
def test_mirrored_strategy_two_gpus_match_one_device(rng):
    """One SGD step of the scan's variables under MirroredStrategy on two GPUs (each
    replica gets half the batch, the gradients are all-reduced) equals the same step on
    one GPU with the whole batch, and both replicas hold the same variables after it."""
    batch, dim, L, N, lr = 4, 32, 300, 16, 0.05
    x = tf.constant(rng.standard_normal((batch, dim, L)), tf.float32)
    B = tf.constant(rng.standard_normal((batch, 1, N, L)), tf.float32)
    C = tf.constant(rng.standard_normal((batch, 1, N, L)), tf.float32)
    init = dict(w_u=rng.uniform(0.5, 1.5, dim), w_dt=rng.uniform(0.2, 0.6, dim),
                A_log=np.log(rng.uniform(0.5, 2.0, (dim, N))), D=rng.standard_normal(dim))
    names = list(init)

    def step(variables, xs, Bs, Cs):
        with tf.GradientTape() as tape:
            loss = _scan_loss(xs, *variables, Bs, Cs, batch)
        grads = tape.gradient(loss, variables)
        return loss, grads

    with tf.device("/GPU:0"):
        single = [tf.Variable(tf.constant(init[k], tf.float32)) for k in names]
        _, grads = step(single, x, B, C)
        for v, g in zip(single, grads):
            v.assign_sub(lr * g)

    strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
    with strategy.scope():
        mirrored = [tf.Variable(tf.constant(init[k], tf.float32)) for k in names]
    dataset = tf.data.Dataset.from_tensor_slices((x, B, C)).batch(batch)
    xs, Bs, Cs = next(iter(strategy.experimental_distribute_dataset(dataset)))

    @tf.function
    def replica_step(xs, Bs, Cs):
        _, grads = step(mirrored, xs, Bs, Cs)
        grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
        for v, g in zip(mirrored, grads):
            v.assign_sub(lr * g)

    strategy.run(replica_step, args=(xs, Bs, Cs))
    for name, one, both in zip(names, single, mirrored):
        replicas = [t.numpy() for t in strategy.experimental_local_results(both)]
        assert len(replicas) == 2
        np.testing.assert_array_equal(replicas[0], replicas[1], err_msg=name)
        np.testing.assert_allclose(replicas[0], one.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
        assert not np.allclose(one.numpy(), init[name].astype(np.float32)), name  # the step moved it

