"""Small real tasks every site can regenerate from a seed (so feeds need not cross the WAN).

- ``digits``: scikit-learn's bundled 8x8 digits (no download), standardised, 80/20 split.
- ``lm``: a synthetic language-model task shipped with the code: token sequences from a
  fixed random bigram chain with a few likely successors per token; the best achievable
  next-token accuracy is known (:attr:`LmTask.bayes_accuracy`), so convergence is visible.
- ``text``: English-like text the code generates from a small grammar (subjects, verbs,
  objects, places, clauses), tokenised by character: a corpus with words, spaces and
  punctuation for the GPT-2-shaped models, the same on every site for one seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from innet.host.geo.ops import Array

Feeds = dict[str, Array]


class DataError(ValueError):
    """Bad dataset settings; names the setting."""


@dataclass(frozen=True)
class Digits:
    x_train: Array
    y_train: Array
    x_test: Array
    y_test: Array

    @classmethod
    def load(cls, seed: int = 0) -> "Digits":
        from innet.host.training.model import digits_arrays

        data, target = digits_arrays()
        x = (data / 16.0).astype(np.float32)
        x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-3)
        y = target.astype(np.int64)
        order = np.random.default_rng(seed).permutation(len(y))
        cut = int(0.8 * len(y))
        tr, te = order[:cut], order[cut:]
        return cls(x[tr], y[tr], x[te], y[te])

    def batches(self, batch: int, microbatches: int, seed: int = 0) -> Iterator[list[Feeds]]:
        """Endless steps, each ``microbatches`` feeds of ``batch`` samples (the same on every site)."""
        rng = np.random.default_rng(seed)
        while True:
            steps = []
            for _ in range(microbatches):
                idx = rng.integers(0, len(self.y_train), batch)
                steps.append({"x": self.x_train[idx], "y": self.y_train[idx]})
            yield steps

    def test_feeds(self) -> Feeds:
        return {"x": self.x_test, "y": self.y_test}

    @property
    def test_labels(self) -> Array:
        return self.y_test


@dataclass(frozen=True)
class LmTask:
    vocab: int
    seq: int
    transition: Array
    """Row-stochastic bigram matrix."""
    test_tokens: Array

    @classmethod
    def make(cls, vocab: int = 32, seq: int = 16, successors: int = 2, seed: int = 0,
             test_sequences: int = 128) -> "LmTask":
        if not 1 <= successors <= vocab:
            raise DataError(f"lm task: successors={successors} must be within 1..vocab ({vocab})")
        rng = np.random.default_rng(seed)
        t = np.full((vocab, vocab), 0.02 / vocab)
        for a in range(vocab):
            nxt = rng.choice(vocab, successors, replace=False)
            t[a, nxt] += rng.dirichlet(np.ones(successors) * 4) * 0.98
        t /= t.sum(axis=1, keepdims=True)
        task = cls(vocab, seq, t, np.zeros((0, seq + 1), np.int64))
        test = task._sample(np.random.default_rng([seed, 1]), test_sequences)
        return cls(vocab, seq, t, test)

    def _sample(self, rng: np.random.Generator, n: int) -> Array:
        out = np.empty((n, self.seq + 1), np.int64)
        out[:, 0] = rng.integers(0, self.vocab, n)
        cum = self.transition.cumsum(axis=1)
        for i in range(1, self.seq + 1):
            u = rng.random(n)[:, None]
            out[:, i] = np.minimum((u > cum[out[:, i - 1]]).sum(axis=1), self.vocab - 1)
        return out

    @property
    def bayes_accuracy(self) -> float:
        """Next-token accuracy of the true chain's most likely successor."""
        return float(self.transition.max(axis=1).mean())

    @property
    def bayes_loss(self) -> float:
        """Cross-entropy (nats) of the true chain on the test set's next tokens: the lowest test
        loss any model can expect."""
        a, b = self.test_tokens[:, :-1], self.test_tokens[:, 1:]
        return float(-np.log(self.transition[a, b]).mean())

    def batches(self, batch: int, microbatches: int, seed: int = 0) -> Iterator[list[Feeds]]:
        rng = np.random.default_rng([seed, 2])
        while True:
            steps = []
            for _ in range(microbatches):
                toks = self._sample(rng, batch)
                steps.append({"tokens": toks[:, :-1], "targets": toks[:, 1:]})
            yield steps

    def test_feeds(self) -> Feeds:
        return {"tokens": self.test_tokens[:, :-1], "targets": self.test_tokens[:, 1:]}

    @property
    def test_labels(self) -> Array:
        return self.test_tokens[:, 1:]


_SUBJECTS = ("the farmer", "a child", "the old sailor", "my sister", "the teacher", "a small dog", "the king",
             "our neighbour", "the baker", "a tired student", "the river", "the wind")
_VERBS = ("sees", "carries", "finds", "paints", "follows", "remembers", "builds", "sells", "opens", "loses")
_OBJECTS = ("a red boat", "the green door", "an old map", "the bread", "a letter", "the garden", "two horses",
            "the bright lamp", "a wooden box", "the last train")
_PLACES = ("in the morning", "near the sea", "after the rain", "under the bridge", "at the market",
           "before dinner", "in the north", "on the hill")
_LINKS = ("and then", "because", "while", "but")


def generate_text(sentences: int, seed: int = 0) -> str:
    """``sentences`` sentences from the grammar ``subject verb object [place] [link subject verb
    object] .``; deterministic for a seed."""
    rng = np.random.default_rng([seed, 3])

    def pick(words: tuple[str, ...]) -> str:
        return words[int(rng.integers(len(words)))]

    out = []
    for _ in range(sentences):
        s = f"{pick(_SUBJECTS)} {pick(_VERBS)} {pick(_OBJECTS)}"
        if rng.random() < 0.6:
            s += f" {pick(_PLACES)}"
        if rng.random() < 0.4:
            s += f" {pick(_LINKS)} {pick(_SUBJECTS)} {pick(_VERBS)} {pick(_OBJECTS)}"
        out.append(s[0].upper() + s[1:] + ".")
    return " ".join(out)


@dataclass(frozen=True)
class TextTask:
    """Character-level language modelling on :func:`generate_text`: windows of ``seq + 1``
    characters drawn from the training text; the test set is a separate stretch of text."""

    alphabet: str
    seq: int
    train: Array
    test_tokens: Array

    @classmethod
    def make(cls, seq: int = 64, sentences: int = 4000, seed: int = 0, test_sequences: int = 64) -> "TextTask":
        if seq < 2 or sentences < 10:
            raise DataError(f"text task: seq={seq} must be >= 2 and sentences={sentences} >= 10")
        text = generate_text(sentences, seed)
        alphabet = "".join(sorted(set(text) | set("".join(_SUBJECTS).upper())))
        ids = np.frombuffer(text.encode("ascii"), np.uint8)
        lut = np.zeros(256, np.int64)
        lut[np.frombuffer(alphabet.encode("ascii"), np.uint8)] = np.arange(len(alphabet))
        tokens = lut[ids]
        cut = int(0.9 * len(tokens))
        train, held = tokens[:cut], tokens[cut:]
        if len(held) < seq + 1 or len(train) < seq + 1:
            raise DataError(f"text task: {sentences} sentences are too few for windows of {seq + 1} characters")
        starts = np.linspace(0, len(held) - seq - 1, test_sequences).astype(np.int64)
        test = np.stack([held[s:s + seq + 1] for s in starts])
        return cls(alphabet, seq, train, test)

    @property
    def vocab(self) -> int:
        return len(self.alphabet)

    def decode(self, tokens: Array) -> str:
        return "".join(self.alphabet[int(t)] for t in np.asarray(tokens).reshape(-1))

    def batches(self, batch: int, microbatches: int, seed: int = 0) -> Iterator[list[Feeds]]:
        rng = np.random.default_rng([seed, 4])
        span = np.arange(self.seq + 1)
        while True:
            steps = []
            for _ in range(microbatches):
                toks = self.train[rng.integers(0, len(self.train) - self.seq - 1, batch)[:, None] + span]
                steps.append({"tokens": toks[:, :-1], "targets": toks[:, 1:]})
            yield steps

    def test_feeds(self) -> Feeds:
        return {"tokens": self.test_tokens[:, :-1], "targets": self.test_tokens[:, 1:]}

    @property
    def test_labels(self) -> Array:
        return self.test_tokens[:, 1:]


def accuracy(logits: Array, labels: Array) -> float:
    return float((logits.argmax(axis=-1) == labels).mean())


def cross_entropy(logits: Array, labels: Array) -> float:
    """Mean cross-entropy (nats) of ``logits`` (..., C) against int ``labels`` (...)."""
    z = logits.reshape(-1, logits.shape[-1]).astype(np.float64)
    y = np.asarray(labels).reshape(-1)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(y)), y].mean())
