"""scan_reference.py: docs/math.md's forward and backward in float64 NumPy, and random problems for the tests."""
import numpy as np


def softplus(v):
    return np.where(v <= 20.0, np.log1p(np.exp(np.minimum(v, 20.0))), v)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def per_channel(X, batch, dim, L):
    """B or C as (batch, dim, N, L): fixed (dim, N) broadcast, variable (batch, G, N, L)
    with channel d reading group d // (dim / G)."""
    if X.ndim == 2:
        return np.broadcast_to(X[None, :, :, None], (batch, dim, X.shape[1], L))
    return np.repeat(X, dim // X.shape[1], axis=1)


def reduce_like(full, X):
    """Sums a (batch, dim, N, L) gradient down to X's layout (docs/math.md's dB, dC)."""
    if X.ndim == 2:
        return full.sum(axis=(0, 3))
    batch, dim, N, L = full.shape
    G = X.shape[1]
    return full.reshape(batch, G, dim // G, N, L).sum(axis=2)


def forward(p):
    """p: dict of float64 arrays u, delta, A, B, C and optional D, z, delta_bias, h0; flag
    softplus. Returns out, last_state and what backward needs."""
    u, delta, A = p["u"], p["delta"], p["A"]
    batch, dim, L = u.shape
    N = A.shape[1]
    v = delta + (p["delta_bias"][:, None] if p.get("delta_bias") is not None else 0.0)
    dt = softplus(v) if p["softplus"] else v
    Bf = per_channel(p["B"], batch, dim, L)
    Cf = per_channel(p["C"], batch, dim, L)
    a = np.exp(dt[:, :, None, :] * A[None, :, :, None])
    x = dt[:, :, None, :] * Bf * u[:, :, None, :]
    h = np.empty((batch, dim, N, L))
    state = p["h0"] if p.get("h0") is not None else np.zeros((batch, dim, N))
    for t in range(L):
        state = a[..., t] * state + x[..., t]
        h[..., t] = state
    y = (Cf * h).sum(axis=2)
    if p.get("D") is not None:
        y = y + p["D"][:, None] * u
    out = y
    if p.get("z") is not None:
        out = y * p["z"] * sigmoid(p["z"])
    saved = dict(v=v, dt=dt, Bf=Bf, Cf=Cf, a=a, h=h, y=y)
    return out, h[..., -1], saved


def backward(p, dout, d_last_state=None):
    """docs/math.md's backward: a dict of gradients named like the inputs."""
    out, _, s = forward(p)
    u, A = p["u"], p["A"]
    batch, dim, L = u.shape
    z = p.get("z")
    grads = {}
    if z is not None:
        sz = sigmoid(z)
        grads["z"] = dout * s["y"] * sz * (1 + z * (1 - sz))
        g = dout * z * sz
    else:
        g = dout
    a, h, Bf, Cf, dt = s["a"], s["h"], s["Bf"], s["Cf"], s["dt"]
    dh = np.empty_like(h)
    carry = d_last_state if d_last_state is not None else np.zeros(h.shape[:3])
    for t in reversed(range(L)):
        carry = Cf[..., t] * g[:, :, None, t] + (a[..., t + 1] * carry if t + 1 < L else carry)
        dh[..., t] = carry
    h0 = p["h0"] if p.get("h0") is not None else np.zeros(h.shape[:3])
    h_prev = np.concatenate([h0[..., None], h[..., :-1]], axis=3)
    D = p.get("D")
    grads["u"] = (dh * dt[:, :, None, :] * Bf).sum(axis=2) + (D[:, None] * g if D is not None else 0.0)
    ddt = (dh * (Bf * u[:, :, None, :] + A[None, :, :, None] * a * h_prev)).sum(axis=2)
    grads["A"] = (dh * dt[:, :, None, :] * a * h_prev).sum(axis=(0, 3))
    grads["B"] = reduce_like(dh * dt[:, :, None, :] * u[:, :, None, :], p["B"])
    grads["C"] = reduce_like(g[:, :, None, :] * h, p["C"])
    if D is not None:
        grads["D"] = (g * u).sum(axis=(0, 2))
    if p.get("h0") is not None:
        grads["h0"] = a[..., 0] * dh[..., 0]
    v = s["v"]
    ddelta = ddt * sigmoid(v) * (v <= 20.0) + ddt * (v > 20.0) if p["softplus"] else ddt
    grads["delta"] = ddelta
    if p.get("delta_bias") is not None:
        grads["delta_bias"] = ddelta.sum(axis=(0, 2))
    return grads


def random_problem(rng, batch, dim, L, N, groups=1, B_var=True, C_var=True, D=True, z=True,
                   delta_bias=True, softplus=True, h0=False):
    """Inputs as docs/math.md suggests: A = -exp(U(0,1)), delta_bias around -4 with softplus,
    u, B, C, z standard normal. float64; the test rounds them to its dtype."""
    p = dict(softplus=softplus)
    p["u"] = rng.standard_normal((batch, dim, L))
    p["delta"] = rng.standard_normal((batch, dim, L)) * 0.5 if softplus else rng.uniform(0.01, 0.3, (batch, dim, L))
    p["A"] = -np.exp(rng.uniform(0, 1, (dim, N)))
    p["B"] = rng.standard_normal((batch, groups, N, L)) if B_var else rng.standard_normal((dim, N))
    p["C"] = rng.standard_normal((batch, groups, N, L)) if C_var else rng.standard_normal((dim, N))
    p["D"] = rng.standard_normal(dim) if D else None
    p["z"] = rng.standard_normal((batch, dim, L)) if z else None
    p["delta_bias"] = (rng.uniform(-4.5, -3.5, dim) if softplus else rng.uniform(0, 0.1, dim)) if delta_bias else None
    p["h0"] = rng.standard_normal((batch, dim, N)) if h0 else None
    return p


def relerr(x, ref):
    x = np.asarray(x, np.float64)
    return float(np.linalg.norm((x - ref).ravel()) / max(np.linalg.norm(np.asarray(ref).ravel()), 1e-30))
