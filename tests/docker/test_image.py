"""The image runs the native executor: a C compiler is in it and the compile cache is
writable by its non-root user, so a switch container starts ``innet.p4`` as generated C
(no fallback line on stderr) and a second start reuses the compiled object."""

from __future__ import annotations

from typing import Any

PROBE = """
import os
from innet.testbed.core.testbed import P4_PROGRAM
from innet.switch.native.select import load_pipeline_file
print(type(load_pipeline_file(P4_PROGRAM, 'auto')).__name__)
first = sorted(os.listdir(os.environ['INNET_NATIVE_CACHE']))
print(type(load_pipeline_file(P4_PROGRAM, 'auto')).__name__)
print(first == sorted(os.listdir(os.environ['INNET_NATIVE_CACHE'])), len(first))
"""


def test_image_runs_the_native_executor_with_a_writable_cache(docker_client: Any, innet_image: str) -> None:
    container = docker_client.containers.run(innet_image, ["python", "-c", PROBE], detach=True)
    try:
        status = container.wait(timeout=300)
        out = container.logs(stdout=True, stderr=False).decode()
        err = container.logs(stdout=False, stderr=True).decode()
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, err[-2000:]
    lines = out.split()
    assert lines[:2] == ["NativePipeline", "NativePipeline"], out + err
    assert lines[2] == "True" and int(lines[3]) >= 1, out  # the second start added nothing: cached
    assert "executor python" not in err and "cannot write" not in err, err
