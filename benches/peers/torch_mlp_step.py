"""PyTorch peer of `benches/benches/training_step.rs`: the MLP 784-512-512-10
training step (ReLU, batch 128, f32, 8 random batches cycled, cross-entropy, Adam
with lr 1e-3 and PyTorch's defaults), eager mode on the CPU. Prints the median step
time at each thread count given.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/torch_mlp_step.py 1 2
"""
import statistics
import sys
import time

import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Linear(784, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
batches = [torch.randn(128, 784) for _ in range(8)]
labels = torch.arange(128) % 10


def step(i):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(net(batches[i % 8]), labels)
    loss.backward()
    opt.step()
    return loss.item()


for threads in [int(a) for a in sys.argv[1:]] or [1, 2]:
    torch.set_num_threads(threads)
    for i in range(50):
        step(i)
    times = []
    for i in range(300):
        s = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - s)
    print(f"torch {torch.__version__}, {threads} thread(s): median MLP step "
          f"{statistics.median(times) * 1e3:.3f} ms over {len(times)} steps")
