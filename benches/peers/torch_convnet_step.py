"""PyTorch peer of the `convnet_3_64_64_b32_32x32_f32_adam` group of
`benches/benches/conv.rs`: conv 3→64, ReLU, conv 64→64, ReLU, global average pool,
linear 64→10 (3×3 kernels, padding 1, bias), batch 32 of 3×32×32 f32 images, 8
random batches cycled, cross-entropy, Adam (lr 1e-3, PyTorch's defaults), eager
mode on the CPU. Prints the median step time at each thread count given.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/torch_convnet_step.py 1 2
"""
import statistics
import sys
import time

import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
batches = [torch.randn(32, 3, 32, 32) for _ in range(8)]
labels = torch.arange(32) % 10


def step(i):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(net(batches[i % 8]), labels)
    loss.backward()
    opt.step()
    return loss.item()


for threads in [int(a) for a in sys.argv[1:]] or [1, 2]:
    torch.set_num_threads(threads)
    for i in range(10):
        step(i)
    times = []
    for i in range(60):
        s = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - s)
    print(f"torch {torch.__version__}, {threads} thread(s): median conv-net step "
          f"{statistics.median(times) * 1e3:.2f} ms over {len(times)} steps")
