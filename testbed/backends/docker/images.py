"""Images of the container testbed: the base image, the pip index of the build, a cache key.

The Dockerfile builds from ``BASE_IMAGE`` (``debian:bookworm-slim``); where no registry
answers, ``docker/build-base.sh`` debootstraps it. Python packages in the image come from
the index the host's pip uses: :func:`pip_build_args` reads ``pip config list`` and the
``PIP_*`` environment, keeps the http(s) indexes (a ``file://`` index means nothing inside
a build) and the CA bundle pip trusts (copied to ``docker/certs/`` for the build stage
only). :func:`image_key` hashes the Dockerfile, constraints and sources, so a test can
reuse an image built from the same inputs (``innet:<key>``) instead of building again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from innet.testbed.core.paths import REPO

BASE_IMAGE = "debian:bookworm-slim"
IMAGE_NAME = "innet"
LABEL = "org.innet.component"
KEY_LABEL = "org.innet.key"
CA_FILE = Path("docker") / "certs" / "pip-ca.crt"
HASHED = ("Dockerfile", ".dockerignore", "constraints.txt", "pyproject.toml", "setup.py")
SOURCE_DIRS = ("wire", "switch", "controller", "host", "testbed", "p4")


class ImageError(RuntimeError):
    """An image could not be found, built or imported (names the image and why)."""


def image_key(repo: Path = REPO) -> str:
    """SHA-256 (16 hex digits) over the files the image is built from."""
    h = hashlib.sha256()
    files = [repo / name for name in HASHED] + sorted(repo.glob("*.py"))
    for d in SOURCE_DIRS:
        files += sorted(p for p in (repo / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        if path.is_file():
            h.update(str(path.relative_to(repo)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class PipSettings:
    """What the image build takes over from the host's pip."""

    index_url: str = ""
    """PIP_INDEX_URL (empty: PyPI)."""
    extra_index_urls: tuple[str, ...] = ()
    """http(s) extra indexes."""
    cert: Path | None = None
    """CA bundle pip trusts (``cert`` / PIP_CERT)."""

    def build_args(self) -> dict[str, str]:
        args = {"PIP_INDEX_URL": self.index_url, "PIP_EXTRA_INDEX_URL": " ".join(self.extra_index_urls)}
        return {k: v for k, v in args.items() if v}


def _http(urls: str) -> tuple[str, ...]:
    return tuple(u for u in urls.split() if u.startswith(("http://", "https://")))


def parse_pip_config(text: str, env: Mapping[str, str]) -> PipSettings:
    """``pip config list`` output (``scope.key='value'`` lines) plus the environment
    (which wins, as for pip itself)."""
    conf: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            conf[key.split(".", 1)[-1].strip()] = value.strip().strip("'\"")
    index = env.get("PIP_INDEX_URL", conf.get("index-url", ""))
    extra = env.get("PIP_EXTRA_INDEX_URL", conf.get("extra-index-url", ""))
    cert = env.get("PIP_CERT", conf.get("cert", ""))
    return PipSettings(_http(index)[0] if _http(index) else "", _http(extra),
                       Path(cert) if cert and Path(cert).is_file() else None)


def host_pip_settings() -> PipSettings:
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return parse_pip_config(out, os.environ)


def ensure_base(client: Any, tag: str = BASE_IMAGE, repo: Path = REPO) -> str:
    """``tag`` present locally: pulled, or built by ``docker/build-base.sh`` when the pull fails."""
    import docker.errors

    try:
        client.images.get(tag)
        return "present"
    except docker.errors.ImageNotFound:
        pass
    repository, _, version = tag.partition(":")
    try:
        client.images.pull(repository, tag=version or "latest")
        return "pulled"
    except docker.errors.APIError:
        pass
    script = repo / "docker" / "build-base.sh"
    result = subprocess.run([str(script), tag], capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise ImageError(f"base image {tag}: no registry answered and {script.name} failed: "
                         f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}")
    return "debootstrap"


def build_image(client: Any, repo: Path = REPO, pip: PipSettings | None = None,
                base: str = BASE_IMAGE) -> str:
    """``innet:<key>`` (also tagged ``innet:latest``), built only when no image has that key."""
    import docker.errors

    key = image_key(repo)
    tag = f"{IMAGE_NAME}:{key}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        ensure_base(client, base, repo)
        pip = pip if pip is not None else host_pip_settings()
        ca = repo / CA_FILE
        if pip.cert is not None:
            shutil.copyfile(pip.cert, ca)
        else:
            ca.unlink(missing_ok=True)
        try:
            client.images.build(path=str(repo), tag=tag, rm=True, forcerm=True,
                                buildargs={"BASE_IMAGE": base, **pip.build_args()},
                                labels={LABEL: "image", KEY_LABEL: key})
        except docker.errors.BuildError as error:
            tail = [str(c.get("stream", "")).strip() for c in error.build_log if c.get("stream")][-5:]
            raise ImageError(f"image {tag}: build failed: {error.msg}; last lines: {' | '.join(tail)}") from None
    client.images.get(tag).tag(IMAGE_NAME, "latest")
    _remove_older(client, key)
    return tag


def _remove_older(client: Any, key: str) -> None:
    """Drop ``innet:<key>`` images of earlier inputs (one cached image at a time); images in
    use by a container stay. Untagged build-stage images are kept: they hold the dependency
    layer a rebuild after a source change reuses (``docker image prune`` removes them)."""
    import docker.errors

    for image in client.images.list(filters={"label": [KEY_LABEL]}):
        if image.labels.get(KEY_LABEL) == key:
            continue
        for old in image.tags:
            try:
                client.images.remove(old)
            except docker.errors.APIError:
                pass
