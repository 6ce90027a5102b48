"""PyTorch side of bench/bench_quant: ResNet-18 with the CIFAR stem (3x3
stride-1 conv1, no maxpool, 10 classes) on 3x32x32, float32 and int8 (eager
PTQ: fuse conv+bn(+relu), FloatFunctional add_relu in the blocks as
torchvision's QuantizableBasicBlock, get_default_qconfig("x86"), engine x86,
4 calibration batches, convert), timed passes alternating float / int8,
medians as images/s. Needs PyTorch 2.x (the PyPI build in /work/venv-torch:
Debian's 1.13.1 has no x86/fbgemm engine).
Usage: quant_resnet.py BATCH [ROUNDS]"""
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.ao.quantization as tq

warnings.filterwarnings("ignore")
batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.set_num_threads(2)
torch.backends.quantized.engine = "x86"


class Block(nn.Module):
    def __init__(self, inp, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inp != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inp, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        self.add_relu = torch.ao.nn.quantized.FloatFunctional()

    def forward(self, x):
        o = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.add_relu.add_relu(o, self.downsample(x) if self.downsample is not None else x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        layers, inp = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(Block(inp, planes, stride), Block(planes, planes, 1)))
            inp = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(self.quant(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.dequant(self.fc(torch.flatten(self.avgpool(x), 1)))


torch.manual_seed(0)
f = Net().eval()
q = Net().eval()
q.load_state_dict(f.state_dict())
tq.fuse_modules(q, [["conv1", "bn1", "relu"]], inplace=True)
for layer in (q.layer1, q.layer2, q.layer3, q.layer4):
    for b in layer:
        tq.fuse_modules(b, [["conv1", "bn1", "relu"], ["conv2", "bn2"]], inplace=True)
        if b.downsample is not None:
            tq.fuse_modules(b.downsample, [["0", "1"]], inplace=True)
q.qconfig = tq.get_default_qconfig("x86")
tq.prepare(q, inplace=True)
torch.manual_seed(1)
with torch.no_grad():
    for _ in range(4):
        q(torch.randn(batch, 3, 32, 32))
tq.convert(q, inplace=True)
x = torch.randn(batch, 3, 32, 32)
tf, tq_ = [], []
with torch.no_grad():
    f(x), q(x)  # warm-up
    for _ in range(rounds):
        t0 = time.perf_counter()
        f(x)
        t1 = time.perf_counter()
        q(x)
        t2 = time.perf_counter()
        tf.append(t1 - t0)
        tq_.append(t2 - t1)
    agree = (f(x).argmax(1) == q(x).argmax(1)).float().mean().item()
mf, mq = statistics.median(tf), statistics.median(tq_)
print("torch_quant_resnet18_f32_b%d_img_s %.1f" % (batch, batch / mf))
print("torch_quant_resnet18_int8_b%d_img_s %.1f" % (batch, batch / mq))
print("torch_quant_resnet18_int8_speedup_b%d %.3f" % (batch, mf / mq))
print("torch_quant_resnet18_top1_agree_b%d %.3f" % (batch, agree))
