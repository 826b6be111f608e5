"""test_multi_worker.py: tf.distribute.MultiWorkerMirroredStrategy with two worker processes on
localhost (CPU), training a model on the SelectiveScan layer (multi_worker_train.py).

Marked `multiworker` (about 30-60 s on two cores): `pytest -m "not multiworker"` leaves it out.
"""
import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
TIMEOUT_S = 240


def free_ports(count):
    """Ports the system hands out now; each socket stays open until all are chosen."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.multiworker
def test_two_workers_end_with_identical_weights(tmp_path):
    workers = [f"localhost:{port}" for port in free_ports(2)]
    processes, outputs = [], []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
        outputs.append(tmp_path / f"worker{index}.npz")
        log = open(tmp_path / f"worker{index}.log", "w")
        processes.append(subprocess.Popen(
            [sys.executable, str(HERE / "multi_worker_train.py"), str(outputs[-1]), "4"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path))
    try:
        codes = [p.wait(timeout=TIMEOUT_S) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    logs = [(tmp_path / f"worker{i}.log").read_text()[-3000:] for i in range(2)]
    assert codes == [0, 0], "\n----\n".join(logs)

    results = [np.load(path) for path in outputs]
    # The workers saw different halves of each batch, so equal weights mean the gradients
    # (the scan's among them) were summed across workers.
    assert results[0]["first_x"].shape == results[1]["first_x"].shape == (4, 12, 8)
    assert not np.array_equal(results[0]["first_x"], results[1]["first_x"])
    names = sorted(k for k in results[0].files if k.startswith("weight:"))
    assert names == sorted(k for k in results[1].files if k.startswith("weight:"))
    assert any(name.endswith("A_log") for name in names), names
    for name in names:
        np.testing.assert_array_equal(results[0][name], results[1][name], err_msg=name)
    losses = results[0]["losses"]
    assert np.all(np.isfinite(losses)), losses
    assert losses[-1] < losses[0], losses
    # The weights moved: the scan's parameters got gradients through the all-reduce.
    a_log = next(results[0][name] for name in names if name.endswith("A_log"))
    assert not np.allclose(a_log, np.log(np.tile(np.arange(1, 5), (8, 1))))
