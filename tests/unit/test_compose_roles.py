"""The compose roles' configuration, switch command and rank claims; the image build's pip
settings and cache key (no Docker needed)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from innet.testbed.ina.compose import ComposeConfig, ComposeError, claim_rank, switch_command
from innet.testbed.backends.docker.images import image_key, parse_pip_config

REPO = Path(__file__).resolve().parents[2]


def test_switch_has_one_udp_port_per_rank():
    argv = switch_command(ComposeConfig(workers=3, udp_base=9000, grpc_port=9559))
    assert argv[argv.index("--grpc-server-addr") + 1] == "0.0.0.0:9559"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-u"] == [
        "1@0.0.0.0:9001", "2@0.0.0.0:9002", "3@0.0.0.0:9003"]


@pytest.mark.parametrize("env, message", [
    ({"INNET_WORKERS": "1"}, r"INNET_WORKERS=1: must be within 2..32"),
    ({"INNET_WORKERS": "two"}, r"INNET_WORKERS='two': expected an integer within 2..32"),
    ({"INNET_DEADLINE": "soon"}, r"INNET_DEADLINE='soon': expected seconds"),
])
def test_bad_environment_is_named(env, message):
    with pytest.raises(ComposeError, match=message):
        ComposeConfig.from_env(env)


def test_concurrent_workers_claim_distinct_ranks(tmp_path):
    config = ComposeConfig(workers=8, results=tmp_path)
    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.append(claim_rank(config))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(8))
    with pytest.raises(ComposeError, match=r"all 8 ranks are taken"):
        claim_rank(config)


def test_pip_settings_keep_http_indexes_and_the_cert(tmp_path):
    cert = tmp_path / "ca.crt"
    cert.write_text("x")
    text = ("global.extra-index-url='file:///opt/pypi/simple https://mirror.example/simple'\n"
            f"global.cert='{cert}'\n:env:.default-timeout='180'\n")
    pip = parse_pip_config(text, {})
    assert (pip.index_url, pip.extra_index_urls, pip.cert) == ("", ("https://mirror.example/simple",), cert)
    assert pip.build_args() == {"PIP_EXTRA_INDEX_URL": "https://mirror.example/simple"}
    pip = parse_pip_config(text, {"PIP_INDEX_URL": "https://idx.example/simple", "PIP_EXTRA_INDEX_URL": ""})
    assert pip.build_args() == {"PIP_INDEX_URL": "https://idx.example/simple"}


def test_image_key_follows_the_sources(tmp_path):
    copy = tmp_path / "repo"
    for name in ("Dockerfile", "constraints.txt", "pyproject.toml", "setup.py"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, copy / name)
    (copy / "host").mkdir()
    (copy / "host" / "wire.py").write_text("A = 1\n")
    before = image_key(copy)
    assert image_key(copy) == before
    (copy / "host" / "wire.py").write_text("A = 2\n")
    assert image_key(copy) != before
