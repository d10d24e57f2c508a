"""The generated text corpus and the GPT-2-shaped model builder."""

from __future__ import annotations

import numpy as np
import pytest

from innet.host.geo.data import DataError, TextTask, generate_text
from innet.host.geo.graph import GraphError, gpt2, loss_and_grads


def test_text_is_deterministic_and_sentence_shaped() -> None:
    a, b = generate_text(50, seed=1), generate_text(50, seed=1)
    assert a == b and a != generate_text(50, seed=2)
    assert a.count(".") == 50 and a[0].isupper()


def test_text_task_windows_and_round_trip() -> None:
    task = TextTask.make(seq=32, sentences=400, test_sequences=8)
    assert task.test_tokens.shape == (8, 33) and task.vocab == len(task.alphabet)
    feeds = next(task.batches(4, 2))
    assert len(feeds) == 2 and feeds[0]["tokens"].shape == (4, 32)
    np.testing.assert_array_equal(feeds[0]["tokens"][:, 1:], feeds[0]["targets"][:, :-1])
    text = task.decode(task.test_tokens[0])
    assert len(text) == 33 and set(text) <= set(task.alphabet)
    with pytest.raises(DataError, match="seq=1 must be >= 2"):
        TextTask.make(seq=1)


def test_gpt2_shape_follows_width() -> None:
    g = gpt2(40, 128, seq=16)
    attn = [n.op for n in g.nodes if n.name.endswith("attn")]
    assert len(attn) == 2 and all(a.heads == 2 for a in attn)
    assert sum(n.name.endswith("attn") for n in gpt2(40, 256, seq=16).nodes) == 4
    with pytest.raises(GraphError, match="width 100 must be a multiple of 64"):
        gpt2(40, 100)


def test_gpt2_learns_the_text() -> None:
    task = TextTask.make(seq=16, sentences=400)
    g = gpt2(task.vocab, 32, layers=1, seq=16)
    p = g.init_params(0)
    it = task.batches(16, 1)
    losses = []
    for _ in range(60):
        loss, grads = loss_and_grads(g, next(it)[0], p)
        losses.append(loss)
        for k, gk in grads.items():
            for kk, v in gk.items():
                p[k][kk] -= 0.5 * v
    assert losses[0] > np.log(task.vocab) - 0.5 and np.mean(losses[-10:]) < losses[0] - 0.8
