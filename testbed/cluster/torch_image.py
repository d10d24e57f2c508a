"""``innet-torch:<key>``: the innet image plus CPU torch, for the cluster's torch workloads
(gloo, DDP, LuWu's trainers, ``torchrun``).

Debian packages no torch for bookworm's python3, and PyPI's Linux wheel pulls gigabytes of
CUDA libraries; so torch comes from the host: ``pip install --target`` of the version the
host's venv runs (its pip finds the CPU wheel where the host found it: a local wheel cache or
index), once, into :data:`SITE`. That directory becomes an image of its own
(``innet-torch-site:<version>``, one layer) and every ``innet-torch`` image copies it onto the
innet image of the moment with ``COPY --from``: the same files give the same layer digest, so
after the first push a registry and every node already hold it, and a source change moves
only innet's own layer.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

SITE = Path("/var/cache/innet-cluster/torch-site")
SITE_IMAGE = "innet-torch-site"
IMAGE_NAME = "innet-torch"
KEY_LABEL = "org.innet.torch-key"
"""Not images.KEY_LABEL: the innet image's pruning of other keys would take these too."""


class TorchImageError(RuntimeError):
    """The torch image could not be made (names the step and why)."""


def host_torch_version() -> str:
    """The torch version of this interpreter's environment; TorchImageError when it has none."""
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:  # PackageNotFoundError
        raise TorchImageError("torch is not installed in this Python environment (pip install torch: the "
                              "cluster image copies the host's version)") from None


def ensure_site(site: Path = SITE, timeout: float = 900.0) -> Path:
    """``pip install --target site torch==<host version>`` once (a ``.done`` file marks it)."""
    torch_version = host_torch_version()
    done = site / ".done"
    if done.exists() and done.read_text().strip() == torch_version:
        return site
    tmp = site.with_name(site.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--target", str(tmp),
                              f"torch=={torch_version}"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TorchImageError(f"pip install --target {tmp} torch=={torch_version}: not done within {timeout:g} s") \
            from None
    if out.returncode != 0:
        raise TorchImageError(f"pip install --target {tmp} torch=={torch_version}: "
                              f"{(out.stderr.strip() or out.stdout.strip())[-300:]}")
    shutil.rmtree(site, ignore_errors=True)
    tmp.rename(site)
    done.write_text(torch_version + "\n")
    return site


def _context(dockerfile: str, files: Path | None = None) -> io.BytesIO:
    """A build context tar: the Dockerfile and, under ``site/``, ``files``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        if files is not None:
            tar.add(str(files), arcname="site", filter=lambda t: None if t.name.endswith(".done") else t)
    buffer.seek(0)
    return buffer


def _build(client: Any, context: io.BytesIO, tag: str, key: str) -> None:
    import docker.errors

    try:
        client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True,
                            labels={KEY_LABEL: key})
    except docker.errors.BuildError as error:
        tail = [str(c.get("stream", "")).strip() for c in error.build_log if c.get("stream")][-5:]
        raise TorchImageError(f"image {tag}: build failed: {error.msg}; last lines: {' | '.join(tail)}") from None
    except docker.errors.APIError as error:
        raise TorchImageError(f"image {tag}: {error.explanation or error}") from None


def _has(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_torch_image(client: Any, innet_image: str) -> str:
    """``innet-torch:<innet key>-<torch version>`` on top of ``innet_image`` (``innet:<key>``)."""
    torch_version = host_torch_version()
    site_tag = f"{SITE_IMAGE}:{torch_version.replace('+', '-')}"
    if not _has(client, site_tag):
        site = ensure_site()
        _build(client, _context("FROM scratch\nCOPY site/ /opt/torch/\n", site), site_tag, torch_version)
    key = f"{innet_image.rpartition(':')[2]}-{torch_version.replace('+', '-')}"
    tag = f"{IMAGE_NAME}:{key}"
    if not _has(client, tag):
        _build(client, _context(f"FROM {innet_image}\nCOPY --from={site_tag} /opt/torch /opt/torch\n"
                                "ENV PYTHONPATH=/opt/torch\n"), tag, key)
    for image in client.images.list(name=IMAGE_NAME):  # one innet-torch image at a time
        for old in image.tags:
            if old != tag:
                try:
                    client.images.remove(old)
                except Exception:  # in use: the next build removes it
                    pass
    return tag
