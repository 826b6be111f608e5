"""multi_worker_train.py: one worker of test_multi_worker.py's MultiWorkerMirroredStrategy run.

    TF_CONFIG=... python3 multi_worker_train.py OUTPUT.npz [STEPS]

Trains a small model built on the SelectiveScan layer for 3 epochs of STEPS steps (a custom
training loop, CPU)
under tf.distribute.MultiWorkerMirroredStrategy, each worker reading its shard of one
dataset, and saves the final weights and the loss per epoch to OUTPUT.npz.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from scanforge_tf.layers import SelectiveScan  # noqa: E402

L, D_MODEL, D_STATE = 12, 8, 4


class ScanBlock(keras.layers.Layer):
    """Projections to the scan's inputs, the scan with learned A and D, a projection back."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.to_scan = keras.layers.Dense(2 * D_MODEL + 2 * D_STATE, name="to_scan")
        self.scan = SelectiveScan(delta_softplus=True)
        self.out = keras.layers.Dense(D_MODEL, name="out")

    def build(self, input_shape):
        self.to_scan.build(input_shape)
        self.out.build((None, None, D_MODEL))
        a_log = np.log(np.tile(np.arange(1, D_STATE + 1, dtype=np.float32), (D_MODEL, 1)))
        self.A_log = self.add_weight(shape=(D_MODEL, D_STATE), name="A_log",
                                     initializer=keras.initializers.Constant(a_log))
        self.D = self.add_weight(shape=(D_MODEL,), name="D", initializer="ones")

    def call(self, x):  # x (batch, L, D_MODEL)
        u, delta, B, C = tf.split(self.to_scan(x), [D_MODEL, D_MODEL, D_STATE, D_STATE], axis=-1)
        channels_first = lambda t: tf.transpose(t, [0, 2, 1])
        y = self.scan(channels_first(u), channels_first(delta), -tf.exp(self.A_log),
                      channels_first(B), channels_first(C), D=self.D)
        return self.out(channels_first(y))


def main():
    output, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 2, strategy.num_replicas_in_sync

    rng = np.random.default_rng(0)  # the same data on every worker; the strategy shards it
    global_batch = 8
    x = rng.standard_normal((steps * global_batch, L, D_MODEL)).astype(np.float32)
    y = x[:, :, :1].cumsum(axis=1).astype(np.float32) / 4.0  # a running sum: the scan's job
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    batches = strategy.experimental_distribute_dataset(data)

    with strategy.scope():
        keras.utils.set_random_seed(1)  # the same initial weights on every worker
        inputs = keras.Input((L, D_MODEL))
        model = keras.Model(inputs, keras.layers.Dense(1)(ScanBlock()(inputs)))
        optimizer = keras.optimizers.Adam(1e-2)
        optimizer.build(model.trainable_variables)

    # Keras 3's fit does not take MultiWorkerMirroredStrategy's per-replica batches
    # (keras 3.15); a custom loop is TensorFlow's documented way and what this tests.
    @tf.function
    def train_step(batch):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_mean(tf.square(model(x, training=True) - y), axis=[1, 2])
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    losses = []
    for _ in range(3):  # three epochs of `steps` steps
        epoch = [float(train_step(batch)) for batch in batches]
        losses.append(np.mean(epoch))
    # Each worker trains on its own shard: only the all-reduce can keep the weights equal.
    first_x = strategy.experimental_local_results(next(iter(batches))[0])[0].numpy()
    weights = {"weight:" + v.path.replace("/", "."): v.numpy() for v in model.weights}
    np.savez(output, losses=np.array(losses), first_x=first_x, **weights)


if __name__ == "__main__":
    main()
