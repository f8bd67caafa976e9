"""PyTorch peer of the `resnet18_train_step_f32` group of `benches/benches/conv.rs`:
ResNet-18 for 32×32 inputs (CIFAR stem: a 3×3 convolution, no max pool; BatchNorm in
training mode; 10 classes), batch 32 of random f32 images, cross-entropy, SGD with
momentum 0.9 (lr 0.01), eager mode on the CPU. Prints the median step time at each
thread count given.

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install torch
    taskset -c 0,1 /tmp/peer/bin/python benches/peers/torch_resnet18_step.py 1 2
"""
import statistics
import sys
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return torch.relu(h + (x if self.short is None else self.short(x)))


def resnet18(classes=10):
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


torch.manual_seed(1)
net = resnet18()
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(32, 3, 32, 32)
labels = torch.arange(32) % 10


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(net(x), labels)
    loss.backward()
    opt.step()
    return loss.item()


for threads in [int(a) for a in sys.argv[1:]] or [1, 2]:
    torch.set_num_threads(threads)
    for _ in range(3):
        step()
    times = []
    for _ in range(10):
        s = time.perf_counter()
        step()
        times.append(time.perf_counter() - s)
    print(f"torch {torch.__version__}, {threads} thread(s): median ResNet-18 step "
          f"{statistics.median(times) * 1e3:.1f} ms over {len(times)} steps")
