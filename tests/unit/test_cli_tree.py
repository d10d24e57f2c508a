"""The whole ``innet`` command tree: every command answers ``--help`` (exit 0) with plain
text, and every option has help text (and so shows its default)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from innet.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
INNET = Path(sys.executable).with_name("innet")


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (command words, parser) of the tree, the root first."""
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += commands(child, path + (name,))
    return out


TREE = commands(build_parser())


def test_the_tree_has_every_command() -> None:
    names = {" ".join(p) for p, _ in TREE}
    assert {"bench luwu", "bench soak", "bench rail-failover", "testbed up", "job create", "geo bench",
            "model cost", "conformance", "train", "demo"} <= names


@pytest.mark.parametrize("words", [p for p, _ in TREE], ids=lambda p: " ".join(p) or "innet")
def test_help_exits_0_in_plain_text(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*words, "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: innet")
    assert "``" not in text and ":mod:" not in text and ":func:" not in text


@pytest.mark.parametrize("words,parser", TREE, ids=[" ".join(p) or "innet" for p, _ in TREE])
def test_every_option_has_help(words: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
    missing = [a.option_strings or a.dest for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert not missing, f"innet {' '.join(words)}: options without help: {missing}"


def test_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    main(["job", "create", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "first slot of the job's range (default: 0)" in text
    assert "sgd/momentum: learning rate (default: 0.0)" in text


def test_version_is_a_subprocess_answer() -> None:
    done = subprocess.run([str(INNET), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("innet ")


@pytest.mark.parametrize("words", [("bench", "luwu"), ("bench", "soak"), ("job", "create"), ("geo", "bench")])
def test_help_as_a_user_types_it(words: tuple[str, ...]) -> None:
    done = subprocess.run([str(INNET), *words, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: innet {' '.join(words)}")
