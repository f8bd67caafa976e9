"""JAX peer of the `convnet_3_64_64_b32_32x32_f32_adam` group of
`benches/benches/conv.rs` (the network and batches of `torch_convnet_step.py`: conv
3→64, ReLU, conv 64→64, ReLU, global average pool, linear 64→10; 3×3, padding 1,
bias; batch 32 of 3×32×32 f32 images, 8 random batches cycled; cross-entropy; Adam
with lr 1e-3 and PyTorch's defaults), jit-compiled on the CPU. XLA's thread count is
fixed when the process starts, so each count is its own run:

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install "jax[cpu]"
    taskset -c 0 /tmp/peer/bin/python benches/peers/jax_convnet_step.py 1
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/jax_convnet_step.py 2
"""
import os
import sys

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                           f"intra_op_parallelism_threads={threads}")

import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

key = jax.random.PRNGKey(0)


def uniform(key, shape, fan_in):
    bound = 1.0 / fan_in ** 0.5
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


ks = jax.random.split(key, 8)
params = {
    "w1": uniform(ks[0], (64, 3, 3, 3), 27), "b1": uniform(ks[1], (64,), 27),
    "w2": uniform(ks[2], (64, 64, 3, 3), 576), "b2": uniform(ks[3], (64,), 576),
    "w3": uniform(ks[4], (64, 10), 64), "b3": uniform(ks[5], (10,), 64),
}
batches = [jax.random.normal(k, (32, 3, 32, 32), jnp.float32) for k in jax.random.split(ks[6], 8)]
labels = jnp.arange(32) % 10


def conv(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def loss_fn(p, x):
    h = jax.nn.relu(conv(x, p["w1"], p["b1"]))
    h = jax.nn.relu(conv(h, p["w2"], p["b2"]))
    logits = h.mean(axis=(2, 3)) @ p["w3"] + p["b3"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(logp[jnp.arange(32), labels])


@jax.jit
def step(p, m, v, t, x):
    loss, g = jax.value_and_grad(loss_fn)(p, x)
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), p, m, v)
    return p, m, v, loss


m = jax.tree_util.tree_map(jnp.zeros_like, params)
v = jax.tree_util.tree_map(jnp.zeros_like, params)
for t in range(1, 11):
    params, m, v, loss = step(params, m, v, float(t), batches[t % 8])
loss.block_until_ready()
times = []
for t in range(11, 71):
    s = time.perf_counter()
    params, m, v, loss = step(params, m, v, float(t), batches[t % 8])
    loss.block_until_ready()
    times.append(time.perf_counter() - s)
print(f"jax {jax.__version__}, {threads} thread(s): median conv-net step "
      f"{statistics.median(times) * 1e3:.2f} ms over {len(times)} steps")
