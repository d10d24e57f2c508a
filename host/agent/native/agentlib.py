"""The agent's C library (``agent.c``): its cffi declarations and loader.

``load()`` compiles ``agent.c`` once per content hash (``innet.native_build``) and
returns the loaded library; it raises ``NativeBuildError`` when no compiler or cffi is
available, which the agent turns into its python fallback.
"""

from __future__ import annotations

from importlib import resources

from innet.native_build import SHARED_FLAGS, NativeLibrary, for_this_cpu, load_library

CDEF = """
typedef struct { int64_t saturated; int64_t nonfinite; int64_t first_bad; } innet_qstats;
void innet_quantize(const float *x, int64_t n, int frac_bits, double bound, int64_t limit,
                    int32_t *out, innet_qstats *st);
void innet_dequantize(const int32_t *q, int64_t n, int frac_bits, float *out);
int64_t innet_pack(uint8_t *buf, int msg_type, int flags, int job, int worker, int slot,
                   uint32_t chunk, int count, int num_workers, uint32_t bitmap, uint32_t epoch,
                   const int32_t *values, int k);
double innet_monotonic(void);

typedef struct {
    uint32_t job, rank, num_workers, window, k, epoch;
    double initial_rto, min_rto, max_rto, granularity, chunk_deadline;
    uint32_t max_outstanding;
    int fd;
    int tunnel;
    uint8_t dest_ip[4];
    uint32_t dest_port;
    uint8_t local_mac[6], switch_mac[6], local_ip[4], switch_ip[4];
    uint32_t local_port, switch_port;
} innet_agg_config;
typedef struct {
    int64_t sent, retransmitted, probes, spurious, backoffs, results, statuses, late, foreign,
        rtt_samples, ignored;
} innet_agg_stats;
typedef struct {
    int has_srtt;
    double srtt, rttvar, last_backoff;
    int backoff;
    int64_t samples;
} innet_rto;
typedef struct {
    int kind;
    int64_t chunk, slot, ver, retries;
    double elapsed;
    int has_bitmap;
    uint32_t bitmap, num_workers, switch_epoch;
    int os_errno;
    int32_t owner;
} innet_agg_error;
typedef struct innet_agg innet_agg;
innet_agg *innet_agg_new(const innet_agg_config *cfg);
void innet_agg_free(innet_agg *a);
innet_agg_stats *innet_agg_stats_of(innet_agg *a);
innet_rto *innet_agg_rto_of(innet_agg *a);
innet_agg_error *innet_agg_error_of(innet_agg *a);
uint64_t innet_agg_position(const innet_agg *a);
void innet_agg_set_position(innet_agg *a, uint64_t p);
uint32_t innet_agg_ident(const innet_agg *a);
void innet_agg_set_ident(innet_agg *a, uint32_t ident);
double innet_agg_rto_now(const innet_agg *a);
int innet_agg_begin(innet_agg *a, const int32_t *in, int64_t n, int32_t *out);
int innet_agg_begin_plan(innet_agg *a, int msg_type, uint32_t first_chunk, int carries, int receives,
                         const int32_t *in, int64_t n, int32_t *out, int64_t nitems, const int64_t *item_c,
                         const uint32_t *item_slot, const uint32_t *item_ver, const int64_t *item_following,
                         const int32_t *item_owner, const uint32_t *ready, int64_t nready);
int innet_agg_step(innet_agg *a, int control_fd);
void innet_agg_abort(innet_agg *a);
"""

DONE, CONTROL, INTR, ERR_DEADLINE, ERR_STALE, ERR_OS, ERR_BUSY = range(7)
"""Return codes of ``innet_agg_begin``/``innet_agg_step``."""


def source() -> str:
    """The C text of the agent library."""
    return resources.files("innet.host.agent.native").joinpath("agent.c").read_text()


FLAGS: tuple[str, ...] = tuple("-O3" if f == "-O2" else f for f in SHARED_FLAGS) + ("-ffp-contract=off",)
"""-O3 (and ``-march=native``, :func:`load`) for the vectorised quantization, whose rounding
adds and subtracts a constant: no FMA contraction, so each step is rounded as written."""


def load() -> NativeLibrary:
    """The loaded agent library (compiled on first use, then cached); raises NativeBuildError."""
    flags, built_for = for_this_cpu(FLAGS)
    return load_library("innet-agent", built_for + "\n" + source(), CDEF, flags)
