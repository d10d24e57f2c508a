/*
 * innet host agent fast path: the C twin of innet.host.quantize (quantize, dequantize),
 * innet.wire (pack, Ethernet/IPv4/UDP framing), innet.host.rto (RFC 6298) and
 * innet.host.protocol (the slot-window send/receive loop with retransmission).
 *
 * The Python modules are the reference: every decision here mirrors one there, in the same
 * order, so the two send the same bytes for the same inputs (tests/unit/test_native_agent.py
 * checks it). Sends are batched with sendmmsg and receives with recvmmsg; the loop returns
 * to Python when the run completes, on an error, when the agent's control pipe is readable
 * or when a signal interrupted the wait (so Python signal handlers run).
 *
 * Two kinds of run: a plain one (innet_agg_begin: CONTRIB chunks 0..n/K, slot and copy from
 * the stream position) and a planned one (innet_agg_begin_plan: REDUCE/BCAST on owner lanes,
 * each item's chunk, slot, copy and successor computed by innet.host.agent.aggregator's
 * plan_owner_op/lane_order and handed over as arrays).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---- quantize (innet.host.quantize) ----------------------------------------------------- */

typedef struct {
    int64_t saturated;
    int64_t nonfinite;
    int64_t first_bad;
} innet_qstats;

/* round(x * 2**frac_bits) half-to-even on float64; |x| > bound clipped first (bound > 0),
 * then |q| > limit clipped; both counted. Multiplying by the power of two is exact-rounded
 * like ldexp. Non-finite inputs are counted (the caller raises) and give 0.
 *
 * Branch-free, so that the library's build (-O3 -march=native) turns it into SIMD code: as a
 * branchy loop calling rint() it took 2.6 ns per value (43 ms for 16M). Rounding adds and
 * subtracts 1.5 * 2**52, which is rint() in the default rounding mode for |s| < 2**51 (the
 * library is built without FMA contraction, so the two are rounded separately); s is first
 * clamped to limit + 1, which changes neither the clip that follows nor its count. */
void innet_quantize(const float *x, int64_t n, int frac_bits, double bound, int64_t limit,
                    int32_t *out, innet_qstats *st)
{
    const double scale = ldexp(1.0, frac_bits), lim = (double)limit, hi = lim + 1.0;
    const double b = bound > 0 ? bound : INFINITY, magic = 6755399441055744.0;
    int64_t sat = 0, bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i];
        int fin = (d - d) == 0.0; /* false for inf and NaN */
        d = fin ? d : 0.0;
        double c = d > b ? b : (d < -b ? -b : d);
        sat += c != d;
        double s = c * scale;
        s = s > hi ? hi : (s < -hi ? -hi : s);
        s = (s + magic) - magic;
        double t = s > lim ? lim : (s < -lim ? -lim : s);
        sat += t != s;
        out[i] = (int32_t)t;
        bad += !fin;
    }
    if (bad)
        for (first = 0; first < n && isfinite(x[first]); first++)
            ;
    st->saturated = sat;
    st->nonfinite = bad;
    st->first_bad = first;
}

/* q / 2**frac_bits as float32 (float64 product, then rounded once, as numpy does). */
void innet_dequantize(const int32_t *q, int64_t n, int frac_bits, float *out)
{
    double scale = ldexp(1.0, -frac_bits);
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)((double)q[i] * scale);
}

/* ---- wire (innet.wire) -------------------------------------------------------------- */

enum { HEADER_LEN = 24, FRAME_OVERHEAD = 42 };
enum { MSG_CONTRIB = 1, MSG_RESULT = 2, MSG_STATUS = 3, MSG_STALE = 4, MSG_REDUCE = 5, MSG_BCAST = 6 };
enum { FLAG_VER = 1, FLAG_RETRANS = 2, FLAG_HDRONLY = 4 };

static void put16(uint8_t *p, uint32_t v) { p[0] = v >> 8; p[1] = v; }
/* Big-endian 32-bit words through a byte swap of an unaligned load or store: the per-value
   loops over a frame then vectorise (byte by byte they did not; packing was 4.7% of all CPU
   time in a 16M allreduce). */
static void put32(uint8_t *p, uint32_t v) { v = __builtin_bswap32(v); memcpy(p, &v, 4); }
static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}

/* Header plus K values (the count valid ones, zero padding); returns the length. */
int64_t innet_pack(uint8_t *buf, int msg_type, int flags, int job, int worker, int slot,
                   uint32_t chunk, int count, int num_workers, uint32_t bitmap, uint32_t epoch,
                   const int32_t *values, int k)
{
    buf[0] = (uint8_t)msg_type;
    buf[1] = (uint8_t)flags;
    put16(buf + 2, job);
    put16(buf + 4, worker);
    put16(buf + 6, slot);
    put32(buf + 8, chunk);
    put16(buf + 12, count);
    put16(buf + 14, num_workers);
    put32(buf + 16, bitmap);
    put32(buf + 20, epoch);
    if (!values) /* header only (HDRONLY): count still names the chunk's values */
        return HEADER_LEN;
    uint8_t *v = buf + HEADER_LEN;
    for (int i = 0; i < count; i++)
        put32(v + 4 * i, (uint32_t)values[i]);
    memset(v + 4 * count, 0, 4 * (size_t)(k - count));
    return HEADER_LEN + 4 * (int64_t)k;
}

static uint16_t ipv4_checksum(const uint8_t *h)
{
    uint32_t total = 0;
    for (int i = 0; i < 20; i += 2)
        total += get16(h + i);
    while (total >> 16)
        total = (total & 0xFFFF) + (total >> 16);
    return (uint16_t)~total;
}

/* ---- configuration, state, results --------------------------------------------------------- */

typedef struct {
    uint32_t job, rank, num_workers, window, k, epoch;
    double initial_rto, min_rto, max_rto, granularity, chunk_deadline;
    uint32_t max_outstanding; /* 0: the window */
    int fd;
    int tunnel;               /* 0: UDP payloads to dest; 1: whole frames tunnelled to dest */
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
    int kind;                   /* INNET_ERR_* of the last step */
    int64_t chunk, slot, ver, retries;
    double elapsed;
    int has_bitmap;
    uint32_t bitmap, num_workers, switch_epoch;
    int os_errno;
    int32_t owner; /* the failing chunk's owner (planned runs), else -1 */
} innet_agg_error;

enum { INNET_DONE = 0, INNET_CONTROL = 1, INNET_INTR = 2, INNET_ERR_DEADLINE = 3,
       INNET_ERR_STALE = 4, INNET_ERR_OS = 5, INNET_ERR_BUSY = 6 };

typedef struct {
    int64_t chunk; /* the chunk field on the wire; -1: free */
    int64_t item;  /* index of the chunk in the run (plain runs: the chunk) */
    int64_t c;     /* chunk index in the run's vector */
    uint32_t count, ver, retries;
    double first_sent, deadline, rto;
    uint64_t gen;
    int acked, backed_off, has_bitmap;
    uint32_t bitmap, num_workers;
} slot_state;

typedef struct { double t; uint32_t slot; uint64_t gen; } timer;

enum { BATCH = 64, RECV_PER_WAKE = 256 };

typedef struct innet_agg {
    innet_agg_config cfg;
    innet_agg_stats stats;
    innet_rto rto;
    innet_agg_error err;
    uint64_t position;
    uint16_t ident;
    /* the run */
    int running;
    uint64_t base;
    int64_t n, chunks, outstanding, done;
    const int32_t *in;
    int32_t *out;
    /* planned runs (innet_agg_begin_plan); planned == 0: a plain CONTRIB run */
    int planned, msg_type, carries, receives;
    uint32_t first_chunk;
    const int64_t *item_c, *item_following;
    const uint32_t *item_slot, *item_ver;
    const int32_t *item_owner;
    slot_state *slots;
    uint32_t *ready;
    int64_t nready, capready;
    timer *timers;
    int64_t ntimers, captimers;
    uint64_t tokens;
    /* send and receive batches */
    size_t msg_len, buf_len;
    uint8_t *sendbuf, *recvbuf;
    struct mmsghdr smsg[BATCH], rmsg[BATCH];
    struct iovec siov[BATCH], riov[BATCH];
    struct sockaddr_in dest;
    int nsend;
} innet_agg;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double innet_monotonic(void) { return now_s(); }

/* ---- RTO (innet.host.rto) -------------------------------------------------------------- */

enum { MAX_BACKOFF = 16 };

static double rto_base(const innet_agg *a)
{
    if (!a->rto.has_srtt)
        return a->cfg.initial_rto;
    double var = 4 * a->rto.rttvar;
    double v = a->rto.srtt + (a->cfg.granularity > var ? a->cfg.granularity : var);
    if (v < a->cfg.min_rto)
        v = a->cfg.min_rto;
    return v < a->cfg.max_rto ? v : a->cfg.max_rto;
}

static double rto_current(const innet_agg *a)
{
    double v = rto_base(a) * (double)(1LL << a->rto.backoff);
    return v < a->cfg.max_rto ? v : a->cfg.max_rto;
}

static void rto_sample(innet_agg *a, double rtt)
{
    if (rtt < 0)
        rtt = 0;
    if (!a->rto.has_srtt) {
        a->rto.has_srtt = 1;
        a->rto.srtt = rtt;
        a->rto.rttvar = rtt / 2;
    } else {
        a->rto.rttvar = 0.75 * a->rto.rttvar + 0.25 * fabs(a->rto.srtt - rtt);
        a->rto.srtt = 0.875 * a->rto.srtt + 0.125 * rtt;
    }
    a->rto.samples++;
    a->rto.backoff = 0;
    a->rto.last_backoff = -INFINITY;
}

static int rto_timed_out(innet_agg *a, double now)
{
    if (a->rto.backoff >= MAX_BACKOFF || now - a->rto.last_backoff < rto_current(a))
        return 0;
    a->rto.backoff++;
    a->rto.last_backoff = now;
    return 1;
}

static void rto_undo(innet_agg *a)
{
    if (a->rto.backoff > 0)
        a->rto.backoff--;
}

/* ---- heaps ---------------------------------------------------------------------------- */

static int timer_less(const timer *x, const timer *y)
{
    if (x->t != y->t)
        return x->t < y->t;
    if (x->slot != y->slot)
        return x->slot < y->slot;
    return x->gen < y->gen;
}

static int timer_push(innet_agg *a, timer t)
{
    if (a->ntimers == a->captimers) {
        int64_t cap = a->captimers ? 2 * a->captimers : 256;
        timer *p = realloc(a->timers, cap * sizeof *p);
        if (!p)
            return -1;
        a->timers = p;
        a->captimers = cap;
    }
    int64_t i = a->ntimers++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!timer_less(&t, &a->timers[parent]))
            break;
        a->timers[i] = a->timers[parent];
        i = parent;
    }
    a->timers[i] = t;
    return 0;
}

static timer timer_pop(innet_agg *a)
{
    timer top = a->timers[0], last = a->timers[--a->ntimers];
    int64_t i = 0, n = a->ntimers;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && timer_less(&a->timers[c + 1], &a->timers[c]))
            c++;
        if (!timer_less(&a->timers[c], &last))
            break;
        a->timers[i] = a->timers[c];
        i = c;
    }
    if (n > 0)
        a->timers[i] = last;
    return top;
}

static void ready_push(innet_agg *a, uint32_t chunk)
{
    int64_t i = a->nready++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (a->ready[parent] <= chunk)
            break;
        a->ready[i] = a->ready[parent];
        i = parent;
    }
    a->ready[i] = chunk;
}

static uint32_t ready_pop(innet_agg *a)
{
    uint32_t top = a->ready[0], last = a->ready[--a->nready];
    int64_t i = 0, n = a->nready;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && a->ready[c + 1] < a->ready[c])
            c++;
        if (a->ready[c] >= last)
            break;
        a->ready[i] = a->ready[c];
        i = c;
    }
    if (n > 0)
        a->ready[i] = last;
    return top;
}

/* ---- life cycle ------------------------------------------------------------------------ */

void innet_agg_free(innet_agg *a)
{
    if (!a)
        return;
    free(a->slots);
    free(a->ready);
    free(a->timers);
    free(a->sendbuf);
    free(a->recvbuf);
    free(a);
}

innet_agg *innet_agg_new(const innet_agg_config *cfg)
{
    innet_agg *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cfg = *cfg;
    a->rto.last_backoff = -INFINITY;
    a->msg_len = HEADER_LEN + 4 * (size_t)cfg->k;
    a->buf_len = a->msg_len + FRAME_OVERHEAD;
    a->slots = calloc(cfg->window, sizeof *a->slots);
    a->ready = calloc(cfg->window, sizeof *a->ready);
    a->sendbuf = malloc(BATCH * a->buf_len);
    a->recvbuf = malloc(BATCH * (size_t)65536);
    if (!a->slots || !a->ready || !a->sendbuf || !a->recvbuf) {
        innet_agg_free(a);
        return NULL;
    }
    a->dest.sin_family = AF_INET;
    memcpy(&a->dest.sin_addr, cfg->dest_ip, 4);
    a->dest.sin_port = htons((uint16_t)cfg->dest_port);
    for (int i = 0; i < BATCH; i++) {
        a->siov[i].iov_base = a->sendbuf + i * a->buf_len;
        a->smsg[i].msg_hdr.msg_iov = &a->siov[i];
        a->smsg[i].msg_hdr.msg_iovlen = 1;
        a->smsg[i].msg_hdr.msg_name = &a->dest;
        a->smsg[i].msg_hdr.msg_namelen = sizeof a->dest;
        a->riov[i].iov_base = a->recvbuf + i * (size_t)65536;
        a->riov[i].iov_len = 65536;
        a->rmsg[i].msg_hdr.msg_iov = &a->riov[i];
        a->rmsg[i].msg_hdr.msg_iovlen = 1;
    }
    return a;
}

innet_agg_stats *innet_agg_stats_of(innet_agg *a) { return &a->stats; }
innet_rto *innet_agg_rto_of(innet_agg *a) { return &a->rto; }
innet_agg_error *innet_agg_error_of(innet_agg *a) { return &a->err; }
uint64_t innet_agg_position(const innet_agg *a) { return a->position; }
void innet_agg_set_position(innet_agg *a, uint64_t p) { a->position = p; }
uint32_t innet_agg_ident(const innet_agg *a) { return a->ident; }
void innet_agg_set_ident(innet_agg *a, uint32_t ident) { a->ident = (uint16_t)ident; }
double innet_agg_rto_now(const innet_agg *a) { return rto_current(a); }

/* ---- sending ------------------------------------------------------------------------ */

static int flush(innet_agg *a)
{
    int off = 0;
    while (off < a->nsend) {
        int r = sendmmsg(a->cfg.fd, a->smsg + off, a->nsend - off, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            /* a full buffer or an ICMP error is a lost datagram; retransmission covers it */
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED || errno == ENOBUFS) {
                off++;
                continue;
            }
            a->err.os_errno = errno;
            a->nsend = 0;
            return -1;
        }
        off += r;
    }
    a->nsend = 0;
    return 0;
}

/* Queue the CONTRIB of slot ``slot``'s chunk (with ``flags``) for the next flush. */
static int queue(innet_agg *a, uint32_t slot, int flags)
{
    if (a->nsend == BATCH && flush(a) < 0)
        return -1;
    const slot_state *s = &a->slots[slot];
    uint8_t *buf = a->sendbuf + a->nsend * a->buf_len;
    uint8_t *msg = a->cfg.tunnel ? buf + FRAME_OVERHEAD : buf;
    int k = (int)a->cfg.k;
    size_t len = a->msg_len;
    int type = a->planned ? a->msg_type : MSG_CONTRIB;
    if (a->planned && !a->carries) { /* a header-only request */
        innet_pack(msg, type, flags | FLAG_HDRONLY, a->cfg.job, a->cfg.rank, slot, (uint32_t)s->chunk,
                   s->count, 0, 0, a->cfg.epoch, NULL, 0);
        len = HEADER_LEN;
    } else {
        innet_pack(msg, type, flags, a->cfg.job, a->cfg.rank, slot, (uint32_t)s->chunk,
                   s->count, 0, 0, a->cfg.epoch, a->in + s->c * k, k);
    }
    size_t payload = len;
    if (a->cfg.tunnel) {
        a->ident = (uint16_t)(a->ident + 1);
        memcpy(buf, a->cfg.switch_mac, 6);
        memcpy(buf + 6, a->cfg.local_mac, 6);
        put16(buf + 12, 0x0800);
        uint8_t *ip = buf + 14;
        ip[0] = 0x45;
        ip[1] = 0;
        put16(ip + 2, 20 + 8 + (uint32_t)payload);
        put16(ip + 4, a->ident);
        put16(ip + 6, 0x4000);
        ip[8] = 64;
        ip[9] = 17;
        put16(ip + 10, 0);
        memcpy(ip + 12, a->cfg.local_ip, 4);
        memcpy(ip + 16, a->cfg.switch_ip, 4);
        put16(ip + 10, ipv4_checksum(ip));
        uint8_t *udp = ip + 20;
        put16(udp, a->cfg.local_port);
        put16(udp + 2, a->cfg.switch_port);
        put16(udp + 4, 8 + (uint32_t)payload);
        put16(udp + 6, 0);
        len += FRAME_OVERHEAD;
    }
    a->siov[a->nsend].iov_len = len;
    a->nsend++;
    return 0;
}

static int arm(innet_agg *a, uint32_t slot, double now)
{
    const slot_state *s = &a->slots[slot];
    double t = now + s->rto;
    timer tm = { t < s->deadline ? t : s->deadline, slot, s->gen };
    return timer_push(a, tm);
}

static int send_chunk(innet_agg *a, uint32_t item, double now)
{
    uint32_t k = a->cfg.k, window = a->cfg.window;
    int64_t c = item;
    uint32_t slot, ver;
    if (a->planned) {
        c = a->item_c[item];
        slot = a->item_slot[item];
        ver = a->item_ver[item];
    } else {
        uint64_t pos = a->base + item;
        slot = (uint32_t)(pos % window);
        ver = (uint32_t)((pos / window) % 2);
    }
    int64_t left = a->n - c * k;
    slot_state *s = &a->slots[slot];
    memset(s, 0, sizeof *s);
    s->chunk = (int64_t)a->first_chunk + c;
    s->item = item;
    s->c = c;
    s->count = left < k ? (uint32_t)left : k;
    s->ver = ver;
    s->first_sent = now;
    s->deadline = now + a->cfg.chunk_deadline;
    s->rto = rto_current(a);
    s->gen = a->tokens++;
    a->outstanding++;
    if (queue(a, slot, (int)ver) < 0)
        return -1;
    a->stats.sent++;
    return arm(a, slot, now);
}

static int fill(innet_agg *a)
{
    uint32_t window = a->cfg.window;
    uint32_t limit = a->cfg.max_outstanding && a->cfg.max_outstanding < window
                         ? a->cfg.max_outstanding : window;
    double now = now_s();
    while (a->nready > 0 && a->outstanding < limit)
        if (send_chunk(a, ready_pop(a), now) < 0)
            return -1;
    return 0;
}

/* ---- receiving ----------------------------------------------------------------------- */

/* One innet message: 1 if it completed an outstanding chunk, 0 if not, -1 on STALE. */
static int handle(innet_agg *a, const uint8_t *d, size_t len)
{
    if (len < HEADER_LEN) {
        a->stats.foreign++;
        return 0;
    }
    uint32_t msg_type = d[0], flags = d[1], job = get16(d + 2), sender = get16(d + 4),
             slot = get16(d + 6), chunk = get32(d + 8), count = get16(d + 12),
             num_workers = get16(d + 14), bitmap = get32(d + 16), epoch = get32(d + 20);
    if (job != a->cfg.job || (msg_type != MSG_RESULT && msg_type != MSG_STATUS && msg_type != MSG_STALE)) {
        a->stats.foreign++;
        return 0;
    }
    if (msg_type == MSG_STALE) {
        if (epoch == a->cfg.epoch) { /* answers a packet of another (older) worker set */
            a->stats.late++;
            return 0;
        }
        a->err.kind = INNET_ERR_STALE;
        a->err.chunk = chunk;
        a->err.switch_epoch = epoch;
        return -1;
    }
    slot_state *s = slot < a->cfg.window ? &a->slots[slot] : NULL;
    if (!s || s->chunk < 0 || (uint32_t)s->chunk != chunk || s->ver != (flags & FLAG_VER)
        || epoch != a->cfg.epoch) {
        a->stats.late++;
        return 0;
    }
    if (msg_type == MSG_STATUS) {
        a->stats.statuses++;
        s->has_bitmap = 1;
        s->bitmap = bitmap;
        s->num_workers = num_workers;
        if (bitmap >> a->cfg.rank & 1) { /* the switch has our contribution: not a loss */
            s->acked = 1;
            if (s->backed_off) {
                rto_undo(a);
                s->backed_off = 0;
            }
        }
        return 0;
    }
    int header_only = (flags & FLAG_HDRONLY) != 0;
    if (!a->planned || a->receives) {
        if (header_only || count != s->count || len < HEADER_LEN + 4 * (size_t)count) {
            a->stats.foreign++;
            return 0;
        }
        int32_t *out = a->out + s->c * a->cfg.k;
        const uint8_t *v = d + HEADER_LEN;
        for (uint32_t i = 0; i < count; i++)
            out[i] = (int32_t)get32(v + 4 * i);
    } else if (!header_only) {
        /* we sent values: the acknowledgement is header-only; a RESULT with values on this
         * copy answers another member's operation */
        a->stats.late++;
        return 0;
    }
    a->stats.results++;
    /* Karn; the RESULT of a retransmitted chunk counts when it echoes our own original */
    if (s->retries == 0 || (sender == a->cfg.rank && !(flags & FLAG_RETRANS))) {
        rto_sample(a, now_s() - s->first_sent);
        a->stats.rtt_samples++;
        if (s->retries)
            a->stats.spurious++;
    }
    int64_t item = s->item;
    s->chunk = -1;
    a->outstanding--;
    a->done++;
    if (a->planned) {
        int64_t following = a->item_following[item];
        if (following >= 0)
            ready_push(a, (uint32_t)following);
        return 1;
    }
    uint64_t following = (uint64_t)item + a->cfg.window; /* the slot's next use */
    if ((int64_t)following < a->chunks)
        ready_push(a, (uint32_t)following);
    return 1;
}

/* The innet payload of a tunnelled frame addressed to this worker, or NULL. */
static const uint8_t *unframe(innet_agg *a, const uint8_t *d, size_t len, size_t *plen)
{
    if (len < FRAME_OVERHEAD || get16(d + 12) != 0x0800)
        return NULL;
    const uint8_t *ip = d + 14;
    size_t ihl = (size_t)(ip[0] & 0x0F) * 4;
    if (ip[0] >> 4 != 4 || ip[9] != 17 || ihl < 20)
        return NULL;
    size_t udp_at = 14 + ihl;
    if (len < udp_at + 8)
        return NULL;
    const uint8_t *udp = d + udp_at;
    size_t ulen = get16(udp + 4);
    size_t end = udp_at + (ulen > 8 ? ulen : 8);
    if (end > len)
        end = len;
    if (memcmp(d, a->cfg.local_mac, 6) || memcmp(ip + 16, a->cfg.local_ip, 4)
        || get16(udp + 2) != a->cfg.local_port)
        return NULL;
    *plen = end - (udp_at + 8);
    return udp + 8;
}

/* Drain up to RECV_PER_WAKE messages; -1 on STALE or a socket error. */
static int receive(innet_agg *a)
{
    int total = 0;
    while (total < RECV_PER_WAKE) {
        int r = recvmmsg(a->cfg.fd, a->rmsg, BATCH, MSG_DONTWAIT, NULL);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNREFUSED)
                return 0;
            a->err.kind = INNET_ERR_OS;
            a->err.os_errno = errno;
            return -1;
        }
        if (r == 0)
            return 0;
        int completed = 0;
        for (int i = 0; i < r; i++) {
            const uint8_t *d = a->riov[i].iov_base;
            size_t len = a->rmsg[i].msg_len;
            if (a->cfg.tunnel) {
                d = unframe(a, d, len, &len);
                if (!d) {
                    a->stats.ignored++;
                    continue;
                }
            }
            int h = handle(a, d, len);
            if (h < 0)
                return -1;
            if (h > 0) {
                completed = 1;
                if (fill(a) < 0) {
                    a->err.kind = INNET_ERR_OS;
                    return -1;
                }
            }
        }
        (void)completed;
        total += r;
        if (r < BATCH)
            return 0;
    }
    return 0;
}

/* ---- timers ------------------------------------------------------------------------ */

static int retransmit(innet_agg *a, uint32_t slot, double now)
{
    slot_state *s = &a->slots[slot];
    if (queue(a, slot, (int)(s->ver | FLAG_RETRANS)) < 0)
        return -1;
    s->retries++;
    a->stats.retransmitted++;
    a->stats.sent++;
    if (s->acked)
        a->stats.probes++;
    else if (rto_timed_out(a, now)) {
        s->backed_off = 1;
        a->stats.backoffs++;
    }
    double doubled = 2 * s->rto, cur = rto_current(a);
    double v = doubled > cur ? doubled : cur;
    s->rto = v < a->cfg.max_rto ? v : a->cfg.max_rto;
    return 0;
}

static int expire(innet_agg *a, double now)
{
    while (a->ntimers > 0 && a->timers[0].t <= now) {
        timer t = timer_pop(a);
        slot_state *s = &a->slots[t.slot];
        if (s->chunk < 0 || s->gen != t.gen)
            continue;
        if (now >= s->deadline) {
            innet_agg_error *e = &a->err;
            e->kind = INNET_ERR_DEADLINE;
            e->chunk = s->chunk;
            e->slot = t.slot;
            e->ver = s->ver;
            e->retries = s->retries;
            e->elapsed = now - s->first_sent;
            e->has_bitmap = s->has_bitmap;
            e->bitmap = s->bitmap;
            e->num_workers = s->num_workers;
            e->owner = a->planned ? a->item_owner[s->item] : -1;
            return -1;
        }
        if (retransmit(a, t.slot, now) < 0) {
            a->err.kind = INNET_ERR_OS;
            return -1;
        }
        s->gen = a->tokens++;
        if (arm(a, t.slot, now) < 0) {
            a->err.kind = INNET_ERR_OS;
            a->err.os_errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

/* ---- the run ---------------------------------------------------------------------- */

/* The state every run starts from: ``items`` chunks to complete, no slot busy, nothing
 * ready, queued or timed yet. */
static void reset_run(innet_agg *a, const int32_t *in, int64_t n, int32_t *out, int64_t items)
{
    a->running = 1;
    a->base = a->position;
    a->n = n;
    a->chunks = items;
    a->outstanding = a->done = 0;
    a->in = in;
    a->out = out;
    a->ntimers = 0;
    a->nready = 0;
    a->nsend = 0;
    for (uint32_t i = 0; i < a->cfg.window; i++)
        a->slots[i].chunk = -1;
}

/* Send the first ready chunks (the rest follow from innet_agg_step). */
static int start_run(innet_agg *a)
{
    if (fill(a) < 0) {
        a->running = 0;
        a->err.kind = INNET_ERR_OS;
        return INNET_ERR_OS;
    }
    return INNET_DONE;
}

/* Start streaming ``n`` values (``in``) into ``out``; both stay the caller's until the run
 * ends (INNET_DONE or an error). Queues the first window; innet_agg_step sends it. */
int innet_agg_begin(innet_agg *a, const int32_t *in, int64_t n, int32_t *out)
{
    memset(&a->err, 0, sizeof a->err);
    a->err.owner = -1;
    if (a->running) {
        a->err.kind = INNET_ERR_BUSY;
        return INNET_ERR_BUSY;
    }
    int64_t chunks = (n + a->cfg.k - 1) / a->cfg.k;
    a->planned = 0;
    a->first_chunk = 0;
    reset_run(a, in, n, out, chunks);
    for (int64_t c = 0; c < chunks && c < a->cfg.window; c++)
        a->ready[a->nready++] = (uint32_t)c; /* ascending: already a heap */
    return start_run(a);
}

/* A planned run (REDUCE/BCAST, module comment): ``nitems`` chunks of this member, item ``i``
 * being chunk ``item_c[i]`` of the ``n``-value vector (job chunk ``first_chunk + item_c[i]``)
 * in slot ``item_slot[i]``, copy ``item_ver[i]``, of owner ``item_owner[i]``; its slot's next
 * use is item ``item_following[i]`` (-1: none); ``ready`` (ascending) may start at once.
 * ``carries``: this member sends values (else header-only requests); ``receives``: the
 * RESULTs carry values for it (else header-only acknowledgements). The arrays, ``in`` and
 * ``out`` stay the caller's until the run ends; the stream position is not moved. */
int innet_agg_begin_plan(innet_agg *a, int msg_type, uint32_t first_chunk, int carries, int receives,
                         const int32_t *in, int64_t n, int32_t *out, int64_t nitems, const int64_t *item_c,
                         const uint32_t *item_slot, const uint32_t *item_ver, const int64_t *item_following,
                         const int32_t *item_owner, const uint32_t *ready, int64_t nready)
{
    memset(&a->err, 0, sizeof a->err);
    a->err.owner = -1;
    if (a->running || nready > a->cfg.window) {
        a->err.kind = INNET_ERR_BUSY;
        return INNET_ERR_BUSY;
    }
    a->planned = 1;
    a->msg_type = msg_type;
    a->carries = carries;
    a->receives = receives;
    a->first_chunk = first_chunk;
    a->item_c = item_c;
    a->item_slot = item_slot;
    a->item_ver = item_ver;
    a->item_following = item_following;
    a->item_owner = item_owner;
    reset_run(a, in, n, out, nitems);
    for (int64_t i = 0; i < nready; i++)
        a->ready[a->nready++] = ready[i]; /* ascending: already a heap */
    return start_run(a);
}

static int fail(innet_agg *a, int kind)
{
    a->running = 0;
    a->nsend = 0;
    a->err.kind = kind;
    return kind;
}

/* innet_agg_step: run until the vector is complete (INNET_DONE), ``control_fd`` (if >= 0) is readable
 * (INNET_CONTROL), a signal interrupts the wait (INNET_INTR), or an error (INNET_ERR_*,
 * details in innet_agg_error_of). Call again after CONTROL and INTR. */
static int step(innet_agg *a, int control_fd, const sigset_t *waitmask)
{
    struct pollfd fds[2] = { { a->cfg.fd, POLLIN, 0 }, { control_fd, POLLIN, 0 } };
    for (;;) {
        if (flush(a) < 0)
            return fail(a, INNET_ERR_OS);
        if (a->done >= a->chunks) {
            a->running = 0;
            if (!a->planned)
                a->position = a->base + (uint64_t)a->chunks;
            return INNET_DONE;
        }
        double timeout = a->cfg.max_rto;
        if (a->ntimers > 0) {
            timeout = a->timers[0].t - now_s();
            if (timeout < 0)
                timeout = 0;
        }
        struct timespec ts = { (time_t)timeout, (long)((timeout - (double)(time_t)timeout) * 1e9) };
        int r = ppoll(fds, control_fd >= 0 ? 2 : 1, &ts, waitmask);
        if (r < 0) {
            if (errno == EINTR)
                return INNET_INTR;
            a->err.os_errno = errno;
            return fail(a, INNET_ERR_OS);
        }
        if (control_fd >= 0 && fds[1].revents)
            return INNET_CONTROL;
        if (fds[0].revents && receive(a) < 0)
            return fail(a, a->err.kind);
        if (expire(a, now_s()) < 0)
            return fail(a, a->err.kind);
    }
}

/* Signals are blocked while the loop works and let through only while it waits (ppoll's
 * mask), so one that arrives mid-batch interrupts the next wait instead of being left
 * for Python until the run ends. */
int innet_agg_step(innet_agg *a, int control_fd)
{
    if (!a->running)
        return fail(a, INNET_ERR_BUSY);
    sigset_t block, old;
    sigfillset(&block);
    int sync[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof sync / sizeof sync[0]; i++)
        sigdelset(&block, sync[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int r = step(a, control_fd, &old);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

/* End a run early (the caller stops waiting): the slots are dropped, the position kept. */
void innet_agg_abort(innet_agg *a)
{
    a->running = 0;
    a->nsend = 0;
}
