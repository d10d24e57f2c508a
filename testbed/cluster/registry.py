"""The innet image in a registry the swarm's nodes pull from (``innet cluster image push``).

The image is built locally exactly as for compose (:func:`innet.testbed.backends.docker.images.build_image`:
the Debian base, debootstrapped where no registry has it, and the host pip's index), tagged
``<registry>/innet:<input hash>`` and pushed. The tag is the hash of the image's inputs, so
every node runs the same bits and a changed source gives a new tag (no stale ``latest``).
"""

from __future__ import annotations

import re
from typing import Any

from innet.testbed.backends.docker.images import IMAGE_NAME, image_key

REGISTRY_RE = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


class RegistryError(RuntimeError):
    """The image could not be pushed (names the registry and why)."""


def check_registry(registry: str) -> str:
    """``host:port`` (or ``host``) of a registry; RegistryError naming the bad value."""
    if not REGISTRY_RE.match(registry):
        raise RegistryError(f"--registry {registry!r}: expected HOST[:PORT], e.g. 10.0.0.1:5000")
    return registry


def image_ref(registry: str) -> str:
    """What the stack's services run: ``<registry>/innet:<input hash>``."""
    return f"{check_registry(registry)}/{IMAGE_NAME}:{image_key()}"


def push_image(client: Any, registry: str, local: str | None = None) -> str:
    """Build (or reuse) the local image (``local``: that image instead, ``name:tag``), tag it for
    ``registry`` and push it; the pushed ref."""
    from innet.testbed.backends.docker.images import build_image

    local = local or build_image(client)
    name, _, tag = local.rpartition(":")  # the key of what was built (sources may change meanwhile)
    repository = f"{check_registry(registry)}/{name}"
    ref = f"{repository}:{tag}"
    client.images.get(local).tag(repository, tag)
    try:
        errors = [line.get("error") or line.get("errorDetail", {}).get("message")
                  for line in client.images.push(repository, tag=tag, stream=True, decode=True)
                  if "error" in line or "errorDetail" in line]
    finally:
        client.images.remove(ref)  # only the registry's name for it; the local name stays
    if errors:
        raise RegistryError(f"push of {ref}: {errors[-1]} (an http registry must be in the engine's "
                            "insecure-registries, except on 127.0.0.0/8)")
    return ref
