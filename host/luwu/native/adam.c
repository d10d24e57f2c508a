/*
 * Fused Adam/AdamW step over one block of float32 parameters and moments (innet.host.ooc_adam).
 *
 * One pass reads p, m, v (from the committed generation) and g, and writes p, m, v (to the
 * generation being built; the same pointers for an in-place step). The arithmetic is
 * torch.optim.Adam's foreach path on CPU, operation for operation:
 *
 *   g = fma(p, wd, g)                        Adam's L2 decay (_foreach_add(g, p, alpha=wd))
 *   p = p * decay                            AdamW (_foreach_mul_(p, 1 - lr*wd))
 *   m = fma(w1, g - m, m)                    _foreach_lerp_(m, g, w1) for w1 < 0.5
 *     = fma(w1 - 1, g - m, g)                ... for w1 >= 0.5
 *   v = fma(omb2 * g, g, v * b2)             _foreach_mul_(v, b2); _foreach_addcmul_(v, g, g, omb2)
 *   d = sqrt(v) / c2 + eps                   _foreach_sqrt, _foreach_div_, _foreach_add_
 *   p = p + (neg_step * m) / d               _foreach_addcdiv_(p, m, d, -lr/bc1)
 *
 * (torch's vector kernels use fused multiply-adds for lerp and addcmul.) sqrtf is IEEE
 * (correctly rounded); torch's sqrt on an MKL build is not always, so parameters agree
 * with torch within about one unit in the last place of the step, m and v exactly.
 *
 * The kernel also returns a position-weighted checksum of each written array,
 * sum(bits[i] * (2*(index0+i)+1)) mod 2^64: additive over pieces written in any order,
 * and any change of one word changes it (the weight is odd).
 */
#include <math.h>
#include <stdint.h>

typedef struct {
    float decay;     /* AdamW: 1 - lr*wd, else 1 */
    float wd;        /* Adam L2: wd, else 0 */
    float w1;        /* 1 - beta1 */
    float b2;        /* beta2 */
    float omb2;      /* 1 - beta2 */
    float c2;        /* sqrt(1 - beta2^t) */
    float eps;
    float neg_step;  /* -(lr / (1 - beta1^t)) */
} innet_adam_params;

/* The loop: parameters in locals (stores through float pointers could alias the struct
 * otherwise), the invariant branches outside, so the compiler vectorizes each variant. */
#define ADAM_LOOP(WD, SMALL)                                                             \
    _Pragma("GCC ivdep") for (int64_t i = 0; i < n; i++) {                              \
        float p = p_in[i] * decay, m = m_in[i], v = v_in[i], g = g_in[i];               \
        if (WD) g = fmaf(p_in[i], wd, g);                                               \
        m = (SMALL) ? fmaf(w1, g - m, m) : fmaf(w1m1, g - m, g);                         \
        v = fmaf(omb2 * g, g, v * b2);                                                  \
        float d = sqrtf(v) / c2 + eps;                                                  \
        p = p + (neg_step * m) / d;                                                     \
        p_out[i] = p; m_out[i] = m; v_out[i] = v;                                       \
    }

#define ADAM_BODY                                                                       \
    const float decay = a->decay, wd = a->wd, w1 = a->w1, w1m1 = a->w1 - 1.0f, b2 = a->b2, \
        omb2 = a->omb2, c2 = a->c2, eps = a->eps, neg_step = a->neg_step;               \
    if (wd != 0.0f) {                                                                   \
        if (small) { ADAM_LOOP(1, 1) } else { ADAM_LOOP(1, 0) }                         \
    } else {                                                                            \
        if (small) { ADAM_LOOP(0, 1) } else { ADAM_LOOP(0, 0) }                         \
    }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma")))
static void adam_fma(const float *p_in, const float *m_in, const float *v_in, const float *g_in,
                     float *p_out, float *m_out, float *v_out, int64_t n, const innet_adam_params *a,
                     int small) {
    ADAM_BODY
}
#endif

static void adam_plain(const float *p_in, const float *m_in, const float *v_in, const float *g_in,
                       float *p_out, float *m_out, float *v_out, int64_t n, const innet_adam_params *a,
                       int small) {
    ADAM_BODY
}

static uint64_t weighted(const uint32_t *w, int64_t n, uint64_t index0) {
    uint64_t s = 0, k = 2 * index0 + 1;
    for (int64_t i = 0; i < n; i++, k += 2)
        s += (uint64_t)w[i] * k;
    return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2")))
static uint64_t weighted_avx2(const uint32_t *w, int64_t n, uint64_t index0) {
    uint64_t s = 0, k = 2 * index0 + 1;
    for (int64_t i = 0; i < n; i++, k += 2)
        s += (uint64_t)w[i] * k;
    return s;
}
#endif

static int have_fma(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
#else
    return 0;
#endif
}

uint64_t innet_checksum(const uint32_t *w, int64_t n, uint64_t index0) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_fma()) return weighted_avx2(w, n, index0);
#endif
    return weighted(w, n, index0);
}

/* One block; sums[0..2] += checksums of the written p, m, v (element index0 is the block's
 * first element in the shard). */
void innet_adam_step(const float *p_in, const float *m_in, const float *v_in, const float *g_in,
                     float *p_out, float *m_out, float *v_out, int64_t n, const innet_adam_params *a,
                     uint64_t index0, uint64_t *sums) {
    int small = a->w1 < 0.5f;
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_fma())
        adam_fma(p_in, m_in, v_in, g_in, p_out, m_out, v_out, n, a, small);
    else
#endif
        adam_plain(p_in, m_in, v_in, g_in, p_out, m_out, v_out, n, a, small);
    sums[0] += innet_checksum((const uint32_t *)p_out, n, index0);
    sums[1] += innet_checksum((const uint32_t *)m_out, n, index0);
    sums[2] += innet_checksum((const uint32_t *)v_out, n, index0);
}
