"""Example PyTorch models for the OP-DAG (``innet geo bench --torch``), built by factories so
that every site builds the same module from a seed (``torchfx.load_factory``)."""

from __future__ import annotations

from typing import Any, Sequence


def mlp(sizes: Sequence[int] = (64, 128, 256, 32, 10), act: str = "relu") -> Any:
    """``Linear -> act -> ... -> Linear`` as a plain ``nn.Module`` (logits out)."""
    import torch.nn as nn

    class Mlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
            self.acts = nn.ModuleList((nn.ReLU() if act == "relu" else nn.GELU(approximate="tanh"))
                                      for _ in range(len(sizes) - 2))

        def forward(self, x: Any) -> Any:
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i < len(self.acts):
                    x = self.acts[i](x)
            return x

    return Mlp()


def gpt(vocab: int = 32, d: int = 32, heads: int = 2, layers: int = 2, seq: int = 16) -> Any:
    """A pre-LN GPT-2 in torch, written so ``torch.fx`` traces it into small nodes (no shape
    reads: the sequence length is fixed)."""
    import torch
    import torch.nn as nn

    hd = d // heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU(approximate="tanh")
            self.out = nn.Linear(4 * d, d)

        def forward(self, h: Any) -> Any:
            qkv = self.qkv(self.ln1(h)).view(-1, seq, 3, heads, hd).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
            s = s.masked_fill(torch.tril(torch.ones(seq, seq)) == 0, float("-inf"))
            a = torch.matmul(torch.softmax(s, dim=-1), v).permute(0, 2, 1, 3).reshape(-1, seq, d)
            h = h + self.proj(a)
            return h + self.out(self.gelu(self.fc(self.ln2(h))))

    class Gpt(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.lnf = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens: Any) -> Any:
            h = self.wte(tokens) + self.wpe(torch.arange(seq))
            for block in self.blocks:
                h = block(h)
            return self.head(self.lnf(h))

    return Gpt()


def resnet(widths: Sequence[int] = (8, 16), classes: int = 10, image: Sequence[int] = (1, 8, 8)) -> Any:
    """The same small ResNet as ``graph.resnet`` (no batch norm), in torch: input ``(B, C*H*W)``."""
    import torch.nn as nn

    c, h, w = image

    class Block(nn.Module):
        def __init__(self, c_in: int, c_out: int) -> None:
            super().__init__()
            stride = 1 if c_in == c_out else 2
            self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1)
            self.relu1 = nn.ReLU()
            self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1)
            self.proj = nn.Conv2d(c_in, c_out, 1, stride, 0, bias=False) if stride != 1 else nn.Identity()
            self.relu2 = nn.ReLU()

        def forward(self, x: Any) -> Any:
            return self.relu2(self.proj(x) + self.c2(self.relu1(self.c1(x))))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(c, widths[0], 3, 1, 1)
            self.relu = nn.ReLU()
            self.blocks = nn.ModuleList(Block(a, b) for a, b in zip([widths[0], *widths[:-1]], widths))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flat = nn.Flatten()
            self.fc = nn.Linear(widths[-1], classes)

        def forward(self, x: Any) -> Any:
            h_ = self.relu(self.stem(x.view(-1, c, h, w)))
            for block in self.blocks:
                h_ = block(h_)
            return self.fc(self.flat(self.pool(h_)))

    return ResNet()
