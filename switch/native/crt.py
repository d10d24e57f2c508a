"""The program-independent C runtime of the native executor (prepended to every generated unit).

Why one string here rather than a separate .c file: the generated translation unit must be
self-contained (one unit per program, hashed as a whole for the build cache), and the
runtime needs the program's sizes (``NSLOTS``, ``NTBL``, ...) that the generator
``#define``s before it.

What it holds: value helpers with P4 semantics on ``uint64_t`` patterns (a value of
``bit<W>``/``int<W>`` is kept as its W-bit unsigned pattern; signed operations sign-extend
with ``SX``), bit-level packet access, BMv2's hash algorithms, match-action tables (an
exact table is a hash index; every other table a list in match order, first hit wins: the
Python control plane orders it by priority or prefix length), the replication engine's
groups and clone sessions as pushed by Python, and the v1model architecture: the same
passes and queues as ``innet.switch.pipeline.v1model`` (see that module for the BMv2
rules), so that outputs come out in the same order.
"""

RUNTIME = r"""
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>
typedef uint64_t u64;
typedef uint32_t u32;
typedef uint8_t u8;
#define MASK(w) ((w) >= 64 ? ~0ULL : ((1ULL << (w)) - 1))
#define DROP_PORT 511
#define I_NORMAL 0
#define I_I2E 1
#define I_E2E 2
#define I_RECIRC 4
#define I_REPL 5
#define I_RESUB 6
#define MAX_PASSES 64

static inline int64_t SX(u64 v, int w) { return w >= 64 ? (int64_t)v : ((int64_t)(v << (64 - w))) >> (64 - w); }
static inline u64 SHL(u64 a, u64 b, int w) { return b >= (u64)w ? 0 : (a << b) & MASK(w); }
static inline u64 SHR(u64 a, u64 b) { return b >= 64 ? 0 : a >> b; }
static inline u64 SSHR(u64 a, u64 b, int w) { return (u64)(SX(a, w) >> (b > 63 ? 63 : b)) & MASK(w); }
static inline u64 DIV(u64 a, u64 b) { return b ? a / b : 0; }
static inline u64 MOD(u64 a, u64 b) { return b ? a % b : 0; }
static inline u64 SATADDU(u64 a, u64 b, int w) { unsigned __int128 s = (unsigned __int128)a + b; return s > MASK(w) ? MASK(w) : (u64)s; }
static inline u64 SATSUBU(u64 a, u64 b) { return a > b ? a - b : 0; }
static inline u64 SATS(__int128 s, int w) {
    __int128 lo = -((__int128)1 << (w - 1)), hi = ((__int128)1 << (w - 1)) - 1;
    if (s < lo) s = lo; if (s > hi) s = hi;
    return (u64)s & MASK(w);
}
static inline u64 getbits(const u8 *p, u32 off, u32 w) {
    const u8 *q = p + (off >> 3);
    if (!(off & 7) && w == 32) { u32 v; memcpy(&v, q, 4); return __builtin_bswap32(v); }  /* folds when inlined */
    u32 sh = off & 7, nb = (sh + w + 7) >> 3;
    unsigned __int128 acc = 0;
    for (u32 i = 0; i < nb; i++) acc = (acc << 8) | q[i];
    acc >>= (nb * 8 - sh - w);
    return (u64)acc & MASK(w);
}
static inline void putbits(u8 *p, u32 off, u32 w, u64 v) {
    u8 *q = p + (off >> 3);
    if (!(off & 7) && w == 32) { u32 x = __builtin_bswap32((u32)v); memcpy(q, &x, 4); return; }
    u32 sh = off & 7, nb = (sh + w + 7) >> 3;
    if (!sh && !(w & 7)) { for (u32 i = 0; i < nb; i++) q[i] = (u8)(v >> (8 * (nb - 1 - i))); return; }
    unsigned __int128 acc = 0;
    for (u32 i = 0; i < nb; i++) acc = (acc << 8) | q[i];
    u32 low = nb * 8 - sh - w;
    unsigned __int128 m = ((unsigned __int128)MASK(w)) << low;
    acc = (acc & ~m) | (((unsigned __int128)(v & MASK(w))) << low);
    for (u32 i = 0; i < nb; i++) q[i] = (u8)(acc >> (8 * (nb - 1 - i)));
}

/* ------------------------------------------------------------------ varbit values
   A varbit slot holds where its bits are, not the bits: a pointer to the packet byte its
   first bit is in (low 48 bits), the bit offset in that byte (3 bits) and the width (13
   bits). Values only come from two-argument extracts (packet bytes, alive for the whole
   sw_process call) or copies of them, and width 0 is the all-zero slot. */
#define VB_MAXW 8191
static inline u64 vb_make(const u8 *p, u32 bitoff, u64 w) {
    if (!w) return 0;
    return (u64)(uintptr_t)(p + (bitoff >> 3)) | ((u64)(bitoff & 7) << 48) | (w << 51);
}
static inline u32 vb_w(u64 v) { return (u32)(v >> 51); }
static inline const u8 *vb_p(u64 v) { return (const u8 *)(uintptr_t)(v & 0xFFFFFFFFFFFFULL); }
static inline u32 vb_o(u64 v) { return (u32)(v >> 48) & 7; }
/* Writes the varbit's bits at bit offset doff of dst (MSB first); the new offset. */
static u32 vb_put(u8 *dst, u32 doff, u64 v) {
    u32 w = vb_w(v), so = vb_o(v); const u8 *s = vb_p(v);
    for (u32 i = 0; i < w; i += 32) { u32 n = w - i < 32 ? w - i : 32; putbits(dst, doff + i, n, getbits(s, so + i, n)); }
    return doff + w;
}
/* Two varbit values are equal when their values are, whatever their widths (simple_switch
   compares the numbers; the P4 spec would also want equal widths). Bits are MSB first, so
   compare from the least significant end, reading 0 above a value's width. */
static int vb_eq(u64 a, u64 b) {
    u32 wa = vb_w(a), wb = vb_w(b), w = wa > wb ? wa : wb;
    for (u32 i = 0; i < w; i++) {
        u32 x = i < wa ? getbits(vb_p(a), vb_o(a) + wa - 1 - i, 1) : 0;
        u32 y = i < wb ? getbits(vb_p(b), vb_o(b) + wb - 1 - i, 1) : 0;
        if (x != y) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ hashes (BMv2) */
static u32 CRC32_T[256]; static uint16_t CRC16_T[256]; static int hash_init_done;
static void hash_init(void) {
    if (hash_init_done) return;
    for (u32 i = 0; i < 256; i++) {
        u32 c = i; for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1; CRC32_T[i] = c;
        uint16_t d = (uint16_t)i; for (int k = 0; k < 8; k++) d = d & 1 ? (d >> 1) ^ 0xA001 : d >> 1; CRC16_T[i] = d;
    }
    hash_init_done = 1;
}
static u64 h_crc32(const u8 *b, u32 n) { u32 c = 0xFFFFFFFFu; for (u32 i = 0; i < n; i++) c = (c >> 8) ^ CRC32_T[(c ^ b[i]) & 0xFF]; return c ^ 0xFFFFFFFFu; }
static u64 h_crc16(const u8 *b, u32 n) { uint16_t c = 0; for (u32 i = 0; i < n; i++) c = (c >> 8) ^ CRC16_T[(c ^ b[i]) & 0xFF]; return c; }
static u64 h_csum16(const u8 *b, u32 n) {
    u64 s = 0; u32 i = 0;
    for (; i + 1 < n; i += 2) s += ((u32)b[i] << 8) | b[i + 1];
    if (i < n) s += (u32)b[i] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}
static u64 h_xor16(const u8 *b, u32 n) { u64 r = 0; u32 i = 0; for (; i + 1 < n; i += 2) r ^= ((u32)b[i] << 8) | b[i + 1]; if (i < n) r ^= (u32)b[i] << 8; return r; }
static u64 h_identity(const u8 *b, u32 n) { u64 r = 0; for (u32 i = 0; i < n; i++) r = (r << 8) | b[i]; return r; }

/* ------------------------------------------------------------------ arena (per call) */
typedef struct chunk { struct chunk *next; size_t used, cap; u8 data[]; } chunk_t;
typedef struct { chunk_t *head; } arena_t;
static void *arena_alloc(arena_t *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->cap) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        chunk_t *c = malloc(sizeof(chunk_t) + cap);
        if (!c) abort();
        c->used = 0; c->cap = cap; c->next = a->head; a->head = c;
    }
    void *p = a->head->data + a->head->used; a->head->used += n; return p;
}
static void arena_reset(arena_t *a) {
    chunk_t *c = a->head; if (!c) return;
    while (c->next) { chunk_t *n = c->next; c->next = n->next; free(n); }
    c->used = 0;
}

/* ------------------------------------------------------------------ tables */
typedef struct {
    double cir, pir, tc, tp, last;  /* rates in units/us, token buckets, last time (us) */
    u64 cburst, pburst;
    u32 configured, has_last;
} mcell_t;
typedef struct {
    int nkeys, nparams, stride, exact, dmeter;
    const u8 *kinds;  /* 0 exact/masked, 1 range */
    u32 n; u64 *ents; /* entry: action, handle, packets, bytes, last hit, (v, m|hi) per key, params */
    u32 hcap; int32_t *hidx;
    u64 *def;         /* same layout as an entry (keys unused) */
    u64 *gp; u32 ngp; /* selector groups: n, then n * (action, params) */
    mcell_t *mc;      /* direct meter cells, one per entry */
} tbl_t;
#define ENT_HDR 5
/* RFC 2698 two-rate three-color marker, as innet.switch.pipeline.externs.MeterCell
   (BMv2's): GREEN 0, YELLOW 1, RED 2; an unconfigured cell is GREEN. */
static u64 meter_exec(mcell_t *m, double now, u64 amount) {
    if (!m->configured) return 0;
    if (!m->has_last) { m->last = now; m->has_last = 1; }
    double dt = now - m->last; if (dt < 0.0) dt = 0.0;
    m->last = now;
    double x = m->tc + dt * m->cir; m->tc = (double)m->cburst <= x ? (double)m->cburst : x;
    x = m->tp + dt * m->pir; m->tp = (double)m->pburst <= x ? (double)m->pburst : x;
    double a = (double)amount;
    if (m->tp < a) return 2;
    if (m->tc < a) { m->tp -= a; return 1; }
    m->tp -= a; m->tc -= a; return 0;
}
#define ACT_GROUP 0xFFFEULL
static inline u64 key_hash(const u64 *k, int n) { u64 h = 0x9E3779B97F4A7C15ULL; for (int i = 0; i < n; i++) { h ^= k[i]; h *= 0xFF51AFD7ED558CCDULL; h ^= h >> 33; } return h; }
/* lo <= k <= hi for n-limb values, most significant limb first; e holds (lo, hi) pairs. */
static int range_cols(const u64 *k, const u64 *e, int n) {
    int i;
    for (i = 0; i < n && k[i] == e[2 * i]; i++) ;
    if (i < n && k[i] < e[2 * i]) return 0;
    for (i = 0; i < n && k[i] == e[2 * i + 1]; i++) ;
    return !(i < n && k[i] > e[2 * i + 1]);
}
static u64 *tbl_find(tbl_t *t, const u64 *k) {
    int nk = t->nkeys, st = t->stride;
    if (t->exact) {
        if (!t->hcap) return NULL;
        u32 m = t->hcap - 1, i = (u32)key_hash(k, nk) & m;
        for (;;) {
            int32_t j = t->hidx[i];
            if (j < 0) return NULL;
            u64 *e = t->ents + (size_t)j * st; int ok = 1;
            for (int q = 0; q < nk; q++) if (e[ENT_HDR + 2 * q] != k[q]) { ok = 0; break; }
            if (ok) return e;
            i = (i + 1) & m;
        }
    }
    for (u32 j = 0; j < t->n; j++) {
        u64 *e = t->ents + (size_t)j * st; int ok = 1;
        for (int q = 0; q < nk; q++) {
            u64 v = e[ENT_HDR + 2 * q], m = e[ENT_HDR + 2 * q + 1]; u8 kd = t->kinds[q];
            if (!kd) { if ((k[q] & m) != v) { ok = 0; break; } continue; }
            if (kd == 1) { if (k[q] < v || k[q] > m) { ok = 0; break; } continue; }
            /* a wide range key: kd - 1 columns, most significant first */
            if (!range_cols(k + q, e + ENT_HDR + 2 * q, kd - 1)) { ok = 0; break; }
            q += kd - 2;
        }
        if (ok) return e;
    }
    return NULL;
}

/* ------------------------------------------------------------------ switch state */
typedef struct { u32 grp, n; u32 *rp; } mcg_t;          /* rp: rid, port pairs */
typedef struct { u32 id, has_port, port, grp, trunc; } sess_t;
typedef struct sw sw_t;
typedef struct { u64 *S; u32 port, depth; } eitem_t;
typedef struct { const u8 *data; u32 len, port, itype; int fl; u64 *saved; } qitem_t;
typedef struct { void *items; u32 head, n, cap; } vec_t;
typedef struct {
    sw_t *sw; const u8 *data; u32 len, pos;
    int exited, fault;
    u64 pend[4096]; u32 npend;  /* digests of this ingress pass: id, receiver, values */
    u8 *ob; u32 olen;           /* deparser output */
} ctx_t;
static void dig_emit(ctx_t *c, u64 id, u64 recv, u32 n, const u64 *vals); /* generated controls call it */
"""

ARCH = r"""
struct sw {
    pthread_mutex_t mu;
    u64 *reg[NREG + 1]; u32 reg_size[NREG + 1];
    u64 *blk[NBLK + 1];  /* register blocks (fuse.py): register r is column REG_OFF[r] of block REG_BLK[r] */
    u64 *cnt_p[NCNT + 1], *cnt_b[NCNT + 1]; u32 cnt_size[NCNT + 1];
    tbl_t tbl[NTBL + 1];
    mcell_t *mtr[NMTR + 1]; int mfixed[NMTR + 1]; double mnow[NMTR + 1];
    mcg_t *groups; u32 ngroups; sess_t *sess; u32 nsess;
    u64 *dq; u32 dq_n, dq_cap, dq_msgs;
    u8 *obuf; u32 ob_len, ob_cap; u32 *orec; u32 on, ocap; /* orec: port, offset, len */
    arena_t arena; vec_t deferred; int burst; vec_t pending;
    u64 rng;
    int now_fixed; u64 now;  /* a clock value Python set for this call (injected clocks) */
    ctx_t ctx;
};
#include <time.h>
/* The pipeline's clock in ns: CLOCK_MONOTONIC (what time.monotonic_ns reads), or the value
   Python read from an injected clock before this call. */
static u64 now_ns(sw_t *sw) {
    if (sw->now_fixed) return sw->now;
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}
/* A meter's clock in us: CLOCK_MONOTONIC (what the python Meter's default clock,
   time.monotonic() * 1e6, reads), or the value Python read from the meter's injected clock. */
static double meter_now(sw_t *sw, int m) {
    if (sw->mfixed[m]) return sw->mnow[m];
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void vec_push(arena_t *a, vec_t *v, const void *item, size_t sz) {
    if (v->n == v->cap) {
        u32 nc = v->cap ? v->cap * 2 : 16; void *ni = arena_alloc(a, nc * sz);
        if (v->n) memcpy(ni, (u8 *)v->items, v->n * sz);
        v->items = ni; v->cap = nc;
    }
    memcpy((u8 *)v->items + (size_t)v->n * sz, item, sz); v->n++;
}
static int vec_pop(vec_t *v, void *item, size_t sz) {
    if (v->head >= v->n) return 0;
    memcpy(item, (u8 *)v->items + (size_t)v->head * sz, sz); v->head++; return 1;
}
static u64 rng_next(sw_t *sw) { u64 x = sw->rng; x ^= x << 13; x ^= x >> 7; x ^= x << 17; sw->rng = x; return x; }
static u64 rnd_range(sw_t *sw, u64 lo, u64 hi) { if (lo > hi) return lo; u64 span = hi - lo + 1; return span ? lo + rng_next(sw) % span : rng_next(sw); }

static mcg_t *group_find(sw_t *sw, u64 grp) { for (u32 i = 0; i < sw->ngroups; i++) if (sw->groups[i].grp == grp) return &sw->groups[i]; return NULL; }
static sess_t *sess_find(sw_t *sw, u64 id) { for (u32 i = 0; i < sw->nsess; i++) if (sw->sess[i].id == id) return &sw->sess[i]; return NULL; }

static void dig_emit(ctx_t *c, u64 id, u64 recv, u32 n, const u64 *vals) {
    if (c->npend + n + 3 > sizeof(c->pend) / sizeof(u64)) return;
    c->pend[c->npend++] = id; c->pend[c->npend++] = recv; c->pend[c->npend++] = n;
    for (u32 i = 0; i < n; i++) c->pend[c->npend++] = vals[i];
}
static void dig_deliver(sw_t *sw, ctx_t *c) {
    if (!c->npend) return;
    if (sw->dq_msgs < 65536) {
        if (sw->dq_n + c->npend > sw->dq_cap) {
            u32 nc = sw->dq_cap ? sw->dq_cap : 1024; while (nc < sw->dq_n + c->npend) nc *= 2;
            sw->dq = realloc(sw->dq, nc * sizeof(u64)); sw->dq_cap = nc;
        }
        memcpy(sw->dq + sw->dq_n, c->pend, c->npend * sizeof(u64)); sw->dq_n += c->npend;
        for (u32 i = 0; i < c->npend; i += 3 + (u32)c->pend[i + 2]) sw->dq_msgs++;
    }
    c->npend = 0;
}
static void out_reserve(sw_t *sw, u32 len) {
    if (sw->ob_len + len > sw->ob_cap) { u32 nc = sw->ob_cap ? sw->ob_cap : 65536; while (nc < sw->ob_len + len) nc *= 2; sw->obuf = realloc(sw->obuf, nc); sw->ob_cap = nc; }
}
/* An output whose hlen header bytes the deparser wrote at obuf + ob_len: the payload after
   them, truncated to trunc (0: no truncation). */
static void out_commit(sw_t *sw, u32 port, u32 hlen, const u8 *pay, u32 plen, u32 trunc) {
    u32 len = hlen + plen; if (trunc && trunc < len) len = trunc;
    if (len > hlen) memcpy(sw->obuf + sw->ob_len + hlen, pay, len - hlen);
    if (sw->on == sw->ocap) { sw->ocap = sw->ocap ? sw->ocap * 2 : 256; sw->orec = realloc(sw->orec, sw->ocap * 3 * sizeof(u32)); }
    sw->orec[3 * sw->on] = port; sw->orec[3 * sw->on + 1] = sw->ob_len; sw->orec[3 * sw->on + 2] = len; sw->on++;
    sw->ob_len += len;
}

static u64 *S_copy(sw_t *sw, const u64 *S) { u64 *T = arena_alloc(&sw->arena, NSLOTS * sizeof(u64)); memcpy(T, S, NSLOTS * sizeof(u64)); return T; }
static void apply_fl(u64 *S, const u64 *saved, int fl) {
    if (fl < 0 || !saved) return;
    const int32_t *l = FIELD_LISTS[fl];
    for (int32_t i = 1; i <= l[0]; i++) S[l[i]] = saved[l[i]];
}
static void reset_meta(u64 *S) {
    memcpy(S + META_LO, TEMPLATE + META_LO, (META_HI - META_LO) * sizeof(u64));
    memcpy(S + SM_LO, TEMPLATE + SM_LO, (SM_HI - SM_LO) * sizeof(u64));
}

static int run_parse(sw_t *sw, u64 *S, const u8 *data, u32 len, u32 port, u32 itype, const u64 *saved, int fl) {
    ctx_t *c = &sw->ctx;
    init_slots(S);  /* TEMPLATE, but fields of big headers only the parser writes (cgen.lazy_headers) */
    if (itype == I_NORMAL || itype == I_I2E) S[SM_INGRESS_PORT] = port;
    S[SM_INSTANCE_TYPE] = itype; S[SM_PACKET_LENGTH] = len;
    apply_fl(S, saved, fl);
    c->data = data; c->len = len; c->pos = 0; c->exited = 0; c->fault = 0;
    PARSER(c, S);
    if (c->fault) return 0;
    lazy_fields(S);
    S[SLOT_PAYP] = (u64)(uintptr_t)(data + c->pos); S[SLOT_PAYL] = len - c->pos;
    if (itype == I_I2E) { reset_meta(S); apply_fl(S, saved, fl); S[SM_INSTANCE_TYPE] = itype; S[SM_PACKET_LENGTH] = len; }
    return 1;
}

static void do_egress(sw_t *sw, u64 *S, u32 eport, u32 pport, vec_t *iq, u32 depth);

static void e2e(sw_t *sw, u64 *S, u32 depth) {
    if (depth >= MAX_PASSES) return;
    sess_t *s = sess_find(sw, S[SLOT_CLS]);
    if (!s) return;
    int fl = (int)S[SLOT_CLF] - 1;
    mcg_t *g = s->has_port ? NULL : group_find(sw, s->grp);
    u32 n = s->has_port ? 1 : (g ? g->n : 0);
    for (u32 i = 0; i < n; i++) {
        u64 *T = S_copy(sw, S);
        reset_meta(T); apply_fl(T, S, fl);
        T[SM_INSTANCE_TYPE] = I_E2E; T[SM_PACKET_LENGTH] = S[SM_PACKET_LENGTH];
        if (!s->has_port) T[SM_EGRESS_RID] = g->rp[2 * i];
        T[SLOT_CL] = 0;
        if (s->trunc) T[SLOT_TR] = s->trunc;
        eitem_t it = {T, s->has_port ? s->port : g->rp[2 * i + 1], depth + 1};
        vec_push(&sw->arena, &sw->pending, &it, sizeof it);
    }
}

static void finish_egress(sw_t *sw, u64 *S, u32 eport, u32 pport, vec_t *iq, u32 depth) {
    ctx_t *c = &sw->ctx;
    if (S[SLOT_CL]) e2e(sw, S, depth);
    if (S[SM_EGRESS_SPEC] == DROP_PORT) return;
    c->exited = 0; c->fault = 0;
    COMPUTE(c, S);
    if (c->fault) return;
    const u8 *pay = (const u8 *)(uintptr_t)S[SLOT_PAYP]; u32 plen = (u32)S[SLOT_PAYL];
    if (!S[SLOT_RC]) {  /* deparse straight into the output buffer */
        out_reserve(sw, DEPARSE_MAX + 16 + plen);
        c->ob = sw->obuf + sw->ob_len; c->olen = 0; c->exited = 0;
        DEPARSER(c, S);
        if (c->fault) return;
        out_commit(sw, eport, c->olen, pay, plen, (u32)S[SLOT_TR]);
        return;
    }
    u8 *hb = arena_alloc(&sw->arena, DEPARSE_MAX + 16);
    c->ob = hb; c->olen = 0; c->exited = 0;
    DEPARSER(c, S);
    if (c->fault) return;
    u32 len = c->olen + plen; if (S[SLOT_TR] && S[SLOT_TR] < len) len = (u32)S[SLOT_TR];
    u8 *p = arena_alloc(&sw->arena, len + 1);
    u32 h = c->olen < len ? c->olen : len; memcpy(p, hb, h); if (len > h) memcpy(p + h, pay, len - h);
    qitem_t q = {p, len, pport, I_RECIRC, (int)S[SLOT_RC] - 1, S};
    vec_push(&sw->arena, sw->burst ? &sw->deferred : iq, &q, sizeof q);
}

static void do_egress(sw_t *sw, u64 *S, u32 eport, u32 pport, vec_t *iq, u32 depth) {
    ctx_t *c = &sw->ctx;
    S[SM_EGRESS_PORT] = eport; S[SM_EGRESS_SPEC] = 0; S[SLOT_CL] = 0; S[SLOT_RC] = 0;
    c->exited = 0; c->fault = 0;
    EGRESS(c, S);
    if (c->fault) return;
    finish_egress(sw, S, eport, pport, iq, depth);
}

static void drain_clones(sw_t *sw, u32 pport, vec_t *iq) {
    eitem_t it;
    while (vec_pop(&sw->pending, &it, sizeof it)) do_egress(sw, it.S, it.port, pport, iq, it.depth);
}

static void after_ingress(sw_t *sw, u64 *S, const u8 *pdata, u32 plen, u32 pport, vec_t *iq) {
    vec_t eq = {0};
    if (S[SLOT_CL]) {
        sess_t *s = sess_find(sw, S[SLOT_CLS]);
        if (s) {
            int fl = (int)S[SLOT_CLF] - 1;
            mcg_t *g = s->has_port ? NULL : group_find(sw, s->grp);
            u32 n = s->has_port ? 1 : (g ? g->n : 0);
            for (u32 i = 0; i < n; i++) {
                u64 *T = arena_alloc(&sw->arena, NSLOTS * sizeof(u64));
                if (!run_parse(sw, T, pdata, plen, pport, I_I2E, S, fl)) continue;
                if (s->trunc) T[SLOT_TR] = s->trunc;
                if (!s->has_port) T[SM_EGRESS_RID] = g->rp[2 * i];
                eitem_t it = {T, s->has_port ? s->port : g->rp[2 * i + 1], 0};
                vec_push(&sw->arena, &eq, &it, sizeof it);
            }
        }
    }
    dig_deliver(sw, &sw->ctx);
    if (S[SLOT_RS]) {
        qitem_t q = {pdata, plen, pport, I_RESUB, (int)S[SLOT_RS] - 1, S};
        vec_push(&sw->arena, iq, &q, sizeof q);
        goto run;
    }
    u64 grp = S[SM_MCAST_GRP];
    if (grp) {
        mcg_t *g = group_find(sw, grp);
        for (u32 i = 0; g && i < g->n; i++) {
            u64 *T = S_copy(sw, S);
            T[SM_EGRESS_RID] = g->rp[2 * i]; T[SM_INSTANCE_TYPE] = I_REPL;
            eitem_t it = {T, g->rp[2 * i + 1], 0};
            vec_push(&sw->arena, &eq, &it, sizeof it);
        }
        goto run;
    }
    if (S[SM_EGRESS_SPEC] != DROP_PORT) {  /* unicast: simple_switch resets instance_type to NORMAL */
        S[SM_INSTANCE_TYPE] = 0;
        eitem_t it = {S, (u32)S[SM_EGRESS_SPEC], 0}; vec_push(&sw->arena, &eq, &it, sizeof it);
    }
run:;
    eitem_t it;
    while (vec_pop(&eq, &it, sizeof it)) { do_egress(sw, it.S, it.port, pport, iq, 0); drain_clones(sw, pport, iq); }
}

static void drain_ingress(sw_t *sw, vec_t *iq) {
    ctx_t *c = &sw->ctx;
    int passes = 1; qitem_t q;
    while (vec_pop(iq, &q, sizeof q)) {
        if (++passes > MAX_PASSES) break;
        u64 *S = arena_alloc(&sw->arena, NSLOTS * sizeof(u64));
        c->npend = 0;
        if (!run_parse(sw, S, q.data, q.len, q.port, q.itype, q.saved, q.fl)) continue;
        c->exited = 0; VERIFY(c, S); if (c->fault) continue;
        c->exited = 0; INGRESS(c, S); if (c->fault) { c->npend = 0; continue; }
        after_ingress(sw, S, q.data, q.len, q.port, iq);
    }
}

static void process_one(sw_t *sw, const u8 *data, u32 len, u32 port) {
    vec_t iq = {0};
    qitem_t q = {data, len, port, I_NORMAL, -1, NULL};
    vec_push(&sw->arena, &iq, &q, sizeof q);
    drain_ingress(sw, &iq);
}

/* ------------------------------------------------------------------ API (called from Python under sw->mu) */
sw_t *sw_new(u64 seed) {
    hash_init();
    sw_t *sw = calloc(1, sizeof(sw_t));
    pthread_mutex_init(&sw->mu, NULL);
    sw->rng = seed ? seed : 0x2545F4914F6CDD1DULL;
    sw->ctx.sw = sw;
    for (int i = 0; i < NBLK; i++) sw->blk[i] = calloc(BLK_CELLS[i], sizeof(u64));
    for (int i = 0; i < NREG; i++) { sw->reg_size[i] = REG_SIZES[i]; sw->reg[i] = sw->blk[REG_BLK[i]] + REG_OFF[i]; }
    for (int i = 0; i < NCNT; i++) { sw->cnt_size[i] = CNT_SIZES[i]; sw->cnt_p[i] = calloc(CNT_SIZES[i] + 1, sizeof(u64)); sw->cnt_b[i] = calloc(CNT_SIZES[i] + 1, sizeof(u64)); }
    for (int i = 0; i < NMTR; i++) sw->mtr[i] = calloc(MTR_SIZES[i] + 1, sizeof(mcell_t));
    for (int i = 0; i < NTBL; i++) {
        tbl_t *t = &sw->tbl[i];
        t->nkeys = TBL_NKEYS[i]; t->nparams = TBL_NPARAMS[i]; t->stride = ENT_HDR + 2 * t->nkeys + t->nparams;
        t->exact = TBL_EXACT[i]; t->kinds = TBL_KINDS[i]; t->dmeter = TBL_DMETER[i];
        t->def = calloc(t->stride + 1, sizeof(u64));
    }
    return sw;
}
void sw_free(sw_t *sw) {
    for (int i = 0; i < NBLK; i++) free(sw->blk[i]);
    for (int i = 0; i < NCNT; i++) { free(sw->cnt_p[i]); free(sw->cnt_b[i]); }
    for (int i = 0; i < NMTR; i++) free(sw->mtr[i]);
    for (int i = 0; i < NTBL; i++) { free(sw->tbl[i].ents); free(sw->tbl[i].hidx); free(sw->tbl[i].def); free(sw->tbl[i].gp); free(sw->tbl[i].mc); }
    for (u32 i = 0; i < sw->ngroups; i++) free(sw->groups[i].rp);
    free(sw->groups); free(sw->sess); free(sw->dq); free(sw->obuf); free(sw->orec);
    arena_reset(&sw->arena); free(sw->arena.head);
    pthread_mutex_destroy(&sw->mu); free(sw);
}
void sw_lock(sw_t *sw) { pthread_mutex_lock(&sw->mu); }
void sw_unlock(sw_t *sw) { pthread_mutex_unlock(&sw->mu); }
u64 *sw_reg(sw_t *sw, int r) { return sw->reg[r]; }
u64 *sw_cnt(sw_t *sw, int r, int bytes) { return bytes ? sw->cnt_b[r] : sw->cnt_p[r]; }
void sw_tbl_load(sw_t *sw, int ti, u32 n, const u64 *ents, const u64 *def, u32 ngp, const u64 *gp) {
    tbl_t *t = &sw->tbl[ti];
    free(t->ents); free(t->hidx); free(t->gp); free(t->mc); t->ents = NULL; t->hidx = NULL; t->hcap = 0;
    t->n = n; t->ngp = ngp;
    t->gp = malloc((ngp + 1) * sizeof(u64)); if (ngp) memcpy(t->gp, gp, ngp * sizeof(u64));
    t->mc = t->dmeter ? calloc(n + 1, sizeof(mcell_t)) : NULL;
    if (n) { t->ents = malloc((size_t)n * t->stride * sizeof(u64)); memcpy(t->ents, ents, (size_t)n * t->stride * sizeof(u64)); }
    memcpy(t->def, def, t->stride * sizeof(u64));
    if (t->exact && n) {
        u32 cap = 16; while (cap < 2 * n) cap *= 2;
        t->hidx = malloc(cap * sizeof(int32_t)); for (u32 i = 0; i < cap; i++) t->hidx[i] = -1; t->hcap = cap;
        u64 k[64];
        for (u32 j = 0; j < n; j++) {
            u64 *e = t->ents + (size_t)j * t->stride;
            for (int q = 0; q < t->nkeys; q++) k[q] = e[ENT_HDR + 2 * q];
            u32 i = (u32)key_hash(k, t->nkeys) & (cap - 1);
            while (t->hidx[i] >= 0) i = (i + 1) & (cap - 1);
            t->hidx[i] = (int32_t)j;
        }
    }
}
u64 *sw_tbl_entries(sw_t *sw, int ti) { return sw->tbl[ti].ents; }
mcell_t *sw_tbl_meters(sw_t *sw, int ti) { return sw->tbl[ti].mc; }
void sw_set_now(sw_t *sw, int fixed, u64 ns) { sw->now_fixed = fixed; sw->now = ns; }
mcell_t *sw_mtr(sw_t *sw, int m) { return sw->mtr[m]; }
void sw_mtr_now(sw_t *sw, int m, int fixed, double us) { sw->mfixed[m] = fixed; sw->mnow[m] = us; }
void sw_pre_load(sw_t *sw, u32 ng, const u32 *groups, u32 ns, const u32 *sess) {
    for (u32 i = 0; i < sw->ngroups; i++) free(sw->groups[i].rp);
    free(sw->groups); free(sw->sess);
    sw->groups = calloc(ng + 1, sizeof(mcg_t)); sw->ngroups = ng;
    const u32 *p = groups;
    for (u32 i = 0; i < ng; i++) {
        sw->groups[i].grp = p[0]; sw->groups[i].n = p[1];
        sw->groups[i].rp = malloc((2 * p[1] + 1) * sizeof(u32)); memcpy(sw->groups[i].rp, p + 2, 2 * p[1] * sizeof(u32));
        p += 2 + 2 * p[1];
    }
    sw->sess = calloc(ns + 1, sizeof(sess_t)); sw->nsess = ns;
    for (u32 i = 0; i < ns; i++) { const u32 *s = sess + 5 * i; sess_t x = {s[0], s[1], s[2], s[3], s[4]}; sw->sess[i] = x; }
}
/* Runs packets (one input after the other; burst != 0: recirculated packets wait until
   every input went through ingress, as Architecture.process_burst). Outputs are read
   with sw_out; the previous call's outputs are discarded. */
u32 sw_process(sw_t *sw, u32 n, const u8 *data, const u32 *lens, const u32 *ports, int burst) {
    sw->on = 0; sw->ob_len = 0; sw->burst = burst;
    vec_t none = {0}; sw->deferred = none; sw->pending = none;
    u32 off = 0;
    for (u32 i = 0; i < n; i++) {
        process_one(sw, data + off, lens[i], ports[i]); off += lens[i];
        /* nothing outlives a packet outside a burst: reuse the arena's (cache-hot) memory */
        if (!burst) { arena_reset(&sw->arena); sw->pending = none; }
    }
    if (burst) {
        u32 budget = MAX_PASSES * (n ? n : 1);
        qitem_t q;
        sw->burst = 0;
        while (vec_pop(&sw->deferred, &q, sizeof q)) {
            if (!budget--) break;
            vec_t iq = {0};
            vec_push(&sw->arena, &iq, &q, sizeof q);
            sw->burst = 1; /* recirculations of deferred packets wait again */
            drain_ingress(sw, &iq);
        }
    }
    sw->burst = 0;
    arena_reset(&sw->arena);
    return sw->on;
}
/* Packets one after the other, each where it lies (datas[i], lens[i] bytes): what a port
   loop receiving into separate buffers (an RX ring) calls, without copying them together. */
u32 sw_process_v(sw_t *sw, u32 n, const u8 *const *datas, const u32 *lens, const u32 *ports) {
    sw->on = 0; sw->ob_len = 0; sw->burst = 0;
    vec_t none = {0}; sw->deferred = none; sw->pending = none;
    for (u32 i = 0; i < n; i++) { process_one(sw, datas[i], lens[i], ports[i]); arena_reset(&sw->arena); sw->pending = none; }
    return sw->on;
}
const u32 *sw_out_recs(sw_t *sw) { return sw->orec; }
const u8 *sw_out_data(sw_t *sw) { return sw->obuf; }
u32 sw_digests(sw_t *sw, const u64 **out) { *out = sw->dq; return sw->dq_n; }
void sw_digests_clear(sw_t *sw) { sw->dq_n = 0; sw->dq_msgs = 0; }
"""

CDEF = """
typedef struct sw sw_t;
sw_t *sw_new(uint64_t seed);
void sw_free(sw_t *sw);
void sw_lock(sw_t *sw);
void sw_unlock(sw_t *sw);
uint64_t *sw_reg(sw_t *sw, int r);
uint64_t *sw_cnt(sw_t *sw, int r, int bytes);
typedef struct {
    double cir, pir, tc, tp, last;
    uint64_t cburst, pburst;
    uint32_t configured, has_last;
} mcell_t;
void sw_tbl_load(sw_t *sw, int ti, uint32_t n, const uint64_t *ents, const uint64_t *def, uint32_t ngp,
                 const uint64_t *gp);
uint64_t *sw_tbl_entries(sw_t *sw, int ti);
mcell_t *sw_tbl_meters(sw_t *sw, int ti);
void sw_set_now(sw_t *sw, int fixed, uint64_t ns);
mcell_t *sw_mtr(sw_t *sw, int m);
void sw_mtr_now(sw_t *sw, int m, int fixed, double us);
void sw_pre_load(sw_t *sw, uint32_t ng, const uint32_t *groups, uint32_t ns, const uint32_t *sess);
uint32_t sw_process(sw_t *sw, uint32_t n, const uint8_t *data, const uint32_t *lens, const uint32_t *ports, int burst);
uint32_t sw_process_v(sw_t *sw, uint32_t n, const uint8_t *const *datas, const uint32_t *lens, const uint32_t *ports);
const uint32_t *sw_out_recs(sw_t *sw);
const uint8_t *sw_out_data(sw_t *sw);
uint32_t sw_digests(sw_t *sw, const uint64_t **out);
void sw_digests_clear(sw_t *sw);
"""
