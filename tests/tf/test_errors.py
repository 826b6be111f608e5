"""test_errors.py: bad inputs raise InvalidArgumentError naming the argument, eagerly and in graphs."""
import pytest
import tensorflow as tf

import scanforge_tf
from scanforge_tf.ops import _ops

batch, dim, L, N = 2, 4, 5, 3


def good():
    return dict(u=tf.ones([batch, dim, L]), delta=tf.ones([batch, dim, L]), A=-tf.ones([dim, N]),
                B=tf.ones([batch, 1, N, L]), C=tf.ones([batch, 1, N, L]))


def replaced(**changes):
    args = good()
    args.update(changes)
    return args


BAD = {
    "u rank 2": (replaced(u=tf.ones([dim, L])), "u"),
    "delta length": (replaced(delta=tf.ones([batch, dim, L + 1])), "delta"),
    "delta dtype": (replaced(delta=tf.ones([batch, dim, L], tf.float16)), "delta"),
    "u float64": (replaced(u=tf.ones([batch, dim, L], tf.float64)), "u"),
    "A dtype": (replaced(A=tf.ones([dim, N], tf.float16)), "A"),
    "A dim": (replaced(A=tf.ones([dim + 1, N])), "A"),
    "B rank 1": (replaced(B=tf.ones([N])), "B"),
    "B groups do not divide dim": (replaced(B=tf.ones([batch, 3, N, L]), C=tf.ones([batch, 3, N, L])), "B"),
    "C groups differ from B": (replaced(C=tf.ones([batch, 2, N, L])), "C"),
    "C one group, B two": (replaced(B=tf.ones([batch, 2, N, L]), C=tf.ones([batch, N, L])), "C"),
    "C state size": (replaced(C=tf.ones([batch, 1, N + 1, L])), "C"),
    "fixed B not float32": (replaced(u=tf.ones([batch, dim, L], tf.bfloat16), delta=tf.ones([batch, dim, L], tf.bfloat16),
                                     B=tf.ones([dim, N], tf.bfloat16), C=tf.ones([batch, 1, N, L], tf.bfloat16)), "B"),
    "z dtype": (replaced(z=tf.ones([batch, dim, L], tf.float16)), "z"),
    "initial_state dtype": (replaced(initial_state=tf.ones([batch, dim, N], tf.float16)), "initial_state"),
    "D size": (replaced(D=tf.ones([dim + 2])), "D"),
    "z batch": (replaced(z=tf.ones([batch + 1, dim, L])), "z"),
    "delta_bias rank": (replaced(delta_bias=tf.ones([dim, 1])), "delta_bias"),
    "initial_state N": (replaced(initial_state=tf.ones([batch, dim, N + 1])), "h0"),
    "N too large": (replaced(A=tf.ones([dim, 300]), B=tf.ones([batch, 1, 300, L]), C=tf.ones([batch, 1, 300, L])), "A"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_eager_bad_input(case):
    args, name = BAD[case]
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"\b{name}\b"):
        scanforge_tf.selective_scan(**args)


@pytest.mark.parametrize("case", ["u rank 2", "delta length", "B groups do not divide dim", "D size", "delta dtype",
                                  "z dtype", "C one group, B two"])
def test_graph_bad_input(case):
    args, name = BAD[case]

    @tf.function
    def f():
        return scanforge_tf.selective_scan(**args)

    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"\b{name}\b"):
        f()


def test_unknown_shapes_are_checked_by_the_kernel():
    """With nothing known at trace time the kernel itself must refuse."""
    spec = tf.TensorSpec(None, tf.float32)

    @tf.function(input_signature=[spec] * 5)
    def f(u, delta, A, B, C):
        return scanforge_tf.selective_scan(u, delta, A, B, C)

    args = replaced(B=tf.ones([batch, 3, N, L]), C=tf.ones([batch, 3, N, L]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="groups"):
        f(args["u"], args["delta"], args["A"], args["B"], args["C"])


def test_raw_op_flag_without_data():
    """An absent optional input must be empty: has_D=False with a D of data is refused."""
    a = good()
    empty = tf.zeros([0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\bD\b.*empty"):
        _ops.mamba_selective_scan(a["u"], a["delta"], a["A"], a["B"], a["C"], tf.ones([dim]), empty, empty, empty)


def test_raw_grad_op_checks_saved_states():
    """3 saved states for L = 5: no state interval gives that count (4 gives 2, 8 and up 1)."""
    a = good()
    empty = tf.zeros([0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="saved_states"):
        _ops.mamba_selective_scan_grad(a["u"], a["delta"], a["A"], a["B"], a["C"], empty, empty, empty, empty,
                                       tf.ones([batch, dim, 3, N]), tf.ones([batch, dim, L]), empty)


def test_process_survives_and_op_still_works():
    for args, _ in BAD.values():
        with pytest.raises(tf.errors.InvalidArgumentError):
            scanforge_tf.selective_scan(**args)
    out = scanforge_tf.selective_scan(**good())
    assert out.shape == (batch, dim, L)


def test_inputs_that_are_not_tensors():
    """Arrays and lists are converted as tf.convert_to_tensor does; a wrong dtype is named."""
    a = {k: v.numpy() for k, v in good().items()}
    out = scanforge_tf.selective_scan(**a, D=[1.0] * dim)
    assert out.shape == (batch, dim, L)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\bdelta\b.*float64"):
        scanforge_tf.selective_scan(**{**a, "delta": a["delta"].astype("float64")})


def test_unknown_rank_B_may_be_fixed_float32_under_float16_u():
    """A graph traced with B's rank unknown cannot tell fixed from variable: no dtype is
    assumed for it at trace time; the kernel checks with the rank known."""
    u = tf.ones([batch, dim, L], tf.float16)

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def f(B):
        return scanforge_tf.selective_scan(u, u, -tf.ones([dim, N]), B, tf.ones([batch, 1, N, L], tf.float16))

    assert f(tf.ones([dim, N])).shape == (batch, dim, L)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\bB\b"):
        f(tf.ones([batch, 1, N, L]))
