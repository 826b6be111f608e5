"""tf_gpu_bench.py: the TensorFlow op on the GPU, per call, beside the bare kernel's time.

    python3 bench/tf_gpu_bench.py [--rows FILE] [--calls 50] [--reps 5] [--scanforge PATH]
                                  [--device /GPU:0]

For each row ('batch,dim,L,N[,z][,dtype]', as `scanforge bench --rows` reads them), the
op's forward, and forward plus every gradient, each inside one tf.function called --calls
times back to back with a single synchronisation at the end (so the time per call is the
GPU's time plus whatever host work does not overlap it). Inputs are the scan's usual:
D, delta_bias and softplus, variable B and C of one group, the gate where the row has z.
With --scanforge, `scanforge bench` times the bare kernels on the same rows in the same
process tree first (its JSON), and the table gives both and their ratio. Medians of
--reps, microseconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import scanforge_tf  # noqa: E402

TYPES = {"fp32": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}


def read_rows(path):
    rows = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        fields = line.split(",")
        batch, dim, L, N = (int(x) for x in fields[:4])
        rest = fields[4:]
        rows.append(dict(batch=batch, dim=dim, L=L, N=N, z="z" in rest,
                         dtype=next((x for x in rest if x in TYPES), "fp32")))
    return rows


def inputs(row, rng):
    T = TYPES[row["dtype"]]
    b, d, L, N = row["batch"], row["dim"], row["L"], row["N"]

    def act(*shape):
        return tf.cast(tf.constant(rng.standard_normal(shape), tf.float32), T)
    t = dict(u=act(b, d, L), delta=act(b, d, L) * 0.5, B=act(b, 1, N, L), C=act(b, 1, N, L),
             A=-tf.exp(tf.constant(rng.uniform(0, 1, (d, N)), tf.float32)),
             D=tf.constant(rng.standard_normal(d), tf.float32),
             delta_bias=tf.constant(rng.uniform(-4.5, -3.5, d), tf.float32))
    t["z"] = act(b, d, L) if row["z"] else None
    t["dout"] = act(b, d, L)
    return t


def per_call_us(fn, calls, reps):
    fn().numpy()  # trace, compile or load the kernels
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(calls - 1):
            fn()
        fn().numpy()  # one synchronisation for the whole run
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def time_row(row, calls, reps, rng, device):
    with tf.device(device):
        t = inputs(row, rng)
        keys = ("u", "delta", "A", "B", "C", "D", "delta_bias")

        def scan(*xs):
            a = dict(zip(keys, xs))
            return scanforge_tf.selective_scan(a["u"], a["delta"], a["A"], a["B"], a["C"], D=a["D"], z=t["z"],
                                               delta_bias=a["delta_bias"], delta_softplus=True)

        @tf.function
        def forward():
            return tf.reduce_sum(tf.cast(scan(*(t[k] for k in keys))[:, :1, :1], tf.float32))

        @tf.function
        def baseline():  # the same reduction without the scan: TensorFlow's own cost per call
            return tf.reduce_sum(tf.cast(t["u"][:, :1, :1], tf.float32))

        @tf.function
        def training():
            xs = [t[k] for k in keys]
            with tf.GradientTape() as tape:
                tape.watch(xs)
                out = scan(*xs)
            grads = tape.gradient(out, xs, output_gradients=t["dout"])
            return tf.add_n([tf.reduce_sum(tf.cast(g[:1], tf.float32)) for g in grads])

        return per_call_us(forward, calls, reps), per_call_us(training, calls, reps), per_call_us(baseline, calls, reps)


def row_key(batch, dim, L, N, z, dtype):
    return (batch, dim, L, N, bool(z), dtype)


def bare_times(scanforge, rows):
    """`scanforge bench`'s forward and backward medians for each row, found by shape and
    type (bench runs a row without a type in several types); (None, None) if it has none."""
    with tempfile.TemporaryDirectory() as tmp:
        rows_path, out = os.path.join(tmp, "rows.txt"), os.path.join(tmp, "bench.json")
        with open(rows_path, "w") as f:
            for r in rows:
                f.write(f"{r['batch']},{r['dim']},{r['L']},{r['N']}{',z' if r['z'] else ''},{r['dtype']}\n")
        subprocess.run([scanforge, "bench", "--rows", rows_path, "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        data = json.load(open(out))
    found = {row_key(r["batch"], r["dim"], r["seqlen"], r["dstate"], r["z"], r["dtype"]):
             (r.get("median_us"), r.get("backward", {}).get("median_us")) for r in data["rows"]}
    return [found.get(row_key(r["batch"], r["dim"], r["L"], r["N"], r["z"], r["dtype"]), (None, None)) for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=os.path.join(os.path.dirname(__file__), "rows_tf_gpu.txt"))
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--scanforge", help="the scanforge command, to time the bare kernels too")
    parser.add_argument("--device", default="/GPU:0", help="where the op runs (/CPU:0 tries the script without a GPU)")
    args = parser.parse_args()
    if "GPU" in args.device.upper() and not tf.config.list_physical_devices("GPU"):
        raise SystemExit("tf_gpu_bench.py: TensorFlow sees no GPU (--device /CPU:0 runs it on the CPU)")
    rows = read_rows(args.rows)
    bare = bare_times(args.scanforge, rows) if args.scanforge else [(None, None)] * len(rows)
    rng = np.random.default_rng(0)
    gpus = tf.config.list_physical_devices("GPU")
    name = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpus else "no GPU"
    print(f"TensorFlow {tf.__version__}, {args.device} ({name})")
    print("(tf base: the same tf.function without the scan, TensorFlow's own time per call)")
    print("row                       type  tf base   op fwd  kernel fwd  ratio | op fwd+bwd  kernels fwd+bwd  ratio")
    for row, (kf, kb) in zip(rows, bare):
        fwd, train, base = time_row(row, args.calls, args.reps, rng, args.device)
        name = f"{row['batch']},{row['dim']},{row['L']},{row['N']}{',z' if row['z'] else ''}"
        if kf is None or kb is None:
            print(f"{name:25s} {row['dtype']:5s} {base:7.1f} {fwd:8.1f}           -      - | {train:10.1f}                -      -")
        else:
            print(f"{name:25s} {row['dtype']:5s} {base:7.1f} {fwd:8.1f} {kf:11.1f} {fwd / kf:6.2f} | {train:10.1f} "
                  f"{kf + kb:16.1f} {train / (kf + kb):6.2f}")


if __name__ == "__main__":
    main()
