"""The optimizer node's C kernel (``adam.c``): fused Adam/AdamW over one block, and checksums.

``load()`` compiles ``adam.c`` once per content hash (``innet.native_build``); it raises
``NativeBuildError`` when no compiler or cffi is available, and ``innet.host.luwu.ooc_adam``
then runs the numpy twin of the same arithmetic.
"""

from __future__ import annotations

from importlib import resources

from innet.native_build import NativeLibrary, load_library

CDEF = """
typedef struct { float decay, wd, w1, b2, omb2, c2, eps, neg_step; } innet_adam_params;
uint64_t innet_checksum(const uint32_t *w, int64_t n, uint64_t index0);
void innet_adam_step(const float *p_in, const float *m_in, const float *v_in, const float *g_in,
                     float *p_out, float *m_out, float *v_out, int64_t n, const innet_adam_params *a,
                     uint64_t index0, uint64_t *sums);
"""

FLAGS = ("-O3", "-shared", "-fPIC", "-std=gnu11", "-fno-strict-aliasing", "-ffp-contract=off", "-fno-math-errno")
"""-O3 vectorizes the loops; no contraction beyond the kernel's explicit fmaf (torch's rounding);
no errno so sqrtf is one instruction."""


def source() -> str:
    return resources.files("innet.host.luwu.native").joinpath("adam.c").read_text()


def load() -> NativeLibrary:
    """The loaded kernel (compiled on first use, then cached); raises NativeBuildError."""
    return load_library("innet-adam", source(), CDEF, FLAGS)
