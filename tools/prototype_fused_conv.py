"""Prototype of the next CPU lever (results/PERFORMANCE.md): Inception-v3 with every
conv+BN+ReLU replaced by oneDNN's prepacked convolution with a fused ReLU post-op
(mkldnn_prepacked::conv2d_prepack/run, present in Debian's LibTorch 1.13), activations kept in
channels_last end to end (no layout reorders), against torch.jit.optimize_for_inference, in one
process, interleaved. usage: /usr/bin/python3 tools/prototype_fused_conv.py"""
import torch, time, warnings, torchvision, io
warnings.filterwarnings("ignore")
torch.set_num_threads(1)
torch.manual_seed(0)
from typing import List
class FusedConv(torch.nn.Module):
    def __init__(self, bc, in_shape):
        super().__init__()
        w = bc.conv.weight; bn = bc.bn
        s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        c = bc.conv
        self.ctx = torch.ops.mkldnn_prepacked.conv2d_prepack((w * s.reshape(-1,1,1,1)).contiguous(), (bn.bias - bn.running_mean * s).contiguous(), list(c.stride), list(c.padding), list(c.dilation), c.groups, in_shape, "relu")
    def forward(self, x):
        return torch.ops.mkldnn_prepacked.conv2d_run(x, self.ctx)
from torchvision.models.inception import BasicConv2d
m = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False).eval()
m.fc = torch.nn.Identity()
shapes = {}
hs = [mm.register_forward_hook(lambda mod, i, o: shapes.__setitem__(mod, list(i[0].shape))) for mm in m.modules() if isinstance(mm, BasicConv2d)]
x = torch.rand(1,3,299,299)
with torch.no_grad(): ref = m(x)
for h in hs: h.remove()
base = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m)))
def replace(mod):
    for name, ch in mod.named_children():
        if isinstance(ch, BasicConv2d): setattr(mod, name, FusedConv(ch, shapes[ch]))
        else: replace(ch)
replace(m)
loaded = torch.jit.script(m)  # scripted in memory: saving works, but loading the prepacked contexts fails in 1.13

xcl = x.contiguous(memory_format=torch.channels_last)
def bench(f, xx, secs=6):
    with torch.inference_mode():
        for _ in range(3): f(xx)
        t=time.time(); n=0
        while time.time()-t < secs: f(xx); n += xx.shape[0]
    return n/(time.time()-t)
with torch.inference_mode():
    y = loaded(xcl); y = y[0] if isinstance(y, tuple) else y
    print("rel err", ((y-ref).norm()/ref.norm()).item())
import sys
for threads in (1, 2):
    torch.set_num_threads(threads)
    for r in range(2):
        print(f"threads={threads} round {r+1}: optimize_for_inference {bench(base, x):.2f} img/s | "
              f"prepacked conv+relu, channels_last {bench(loaded, xcl):.2f} img/s", flush=True)
torch.set_num_threads(1)
x4 = torch.rand(4,3,299,299)
print(f"threads=1 batch 4: optimize_for_inference {bench(base, x4):.2f} | prepacked (packed for batch 1) "
      f"{bench(loaded, x4.contiguous(memory_format=torch.channels_last)):.2f} img/s", flush=True)
