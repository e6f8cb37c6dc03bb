/* SPDX-License-Identifier: Apache-2.0 */
/* POWER9 VSX kernels of the 32-element block formats: Q8_0 / Q8_1 activation quantizers and
 * the dot products of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL weights with them.
 *
 * Integer products use vmsummbm (signed x unsigned bytes, 4 products summed per int lane)
 * where the weight levels are unsigned (the offset -8 / -16 is applied through the sum of
 * the activations), and vmulesb/vmulosb + vsum4shs where both sides are signed. Each weight
 * block is decoded once and used for every activation row; each row keeps its own float
 * accumulator updated in the same order whatever nr is (batch invariance). */
#include "vsx/kernels_vsx.h"

/* ---- activation quantizers (bit-exact with the scalar ones: amax/127, lrint) ------------ */

/* 32 floats -> 32 int8 levels with scale d; returns d and the level sum in *sum. */
static float vsx_q8_block(const float *x, int8_t *qs, int *sum) {
    st_v4f v[8];
    st_v4f amax = vec_splats(0.0f);
    for (int i = 0; i < 8; i++) {
        v[i] = vec_xl(0, x + 4 * i);
        amax = vec_max(amax, vec_abs(v[i]));
    }
    float a = amax[0];
    for (int i = 1; i < 4; i++) a = amax[i] > a ? amax[i] : a;
    float d = a / 127.0f, id = d != 0.0f ? 127.0f / a : 0.0f;
    st_v4f vid = vec_splats(id);
    st_v4i q[8], s = vec_splats(0);
    for (int i = 0; i < 8; i++) {
        q[i] = vec_cts(vec_rint(vec_mul(v[i], vid)), 0);
        s = vec_add(s, q[i]);
    }
    st_v8s h0 = vec_pack(q[0], q[1]), h1 = vec_pack(q[2], q[3]);
    st_v8s h2 = vec_pack(q[4], q[5]), h3 = vec_pack(q[6], q[7]);
    vec_xst(vec_pack(h0, h1), 0, (signed char *)qs);
    vec_xst(vec_pack(h2, h3), 0, (signed char *)qs + 16);
    *sum = st_vsx_hsum_i(s);
    return d;
}

static void vsx_q8_0_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_0; b++, x += ST_QK8_0) {
        int sum;
        y[b].d = st_cpu_f2h(vsx_q8_block(x, y[b].qs, &sum));
    }
}

static void vsx_q8_1_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / ST_QK8_1; b++, x += ST_QK8_1) {
        int sum;
        float d = vsx_q8_block(x, y[b].qs, &sum);
        y[b].d = st_cpu_f2h(d);
        y[b].s = st_cpu_f2h(d * (float)sum);
    }
}

/* ---- weight decoding ------------------------------------------------------------------ */

/* Elements 0..15 (lo) and 16..31 (hi) of a 4-bit block as unsigned levels 0..15. */
static inline void vsx_nibbles(const uint8_t *qs, st_v16u *lo, st_v16u *hi) {
    st_v16u q = st_vsx_load_u8(qs);
    *lo = vec_and(q, vec_splats((unsigned char)0x0f));
    *hi = vec_sr(q, vec_splats((unsigned char)4));
}

/* Add the fifth bits (qh, 32 bits little-endian: bit j belongs to element j) to 4-bit levels,
 * giving 0..31: byte j of a vector picks qh byte j/8, keeps bit j%8 and turns it into 0x10. */
static inline void vsx_add_q5_bits(const uint8_t qh[4], st_v16u *lo, st_v16u *hi) {
    static const unsigned char pick_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const unsigned char pick_hi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const unsigned char bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint32_t h;
    memcpy(&h, qh, sizeof h);
    st_v16u hv = (st_v16u)vec_splats(h);
    st_v16u b = vec_xl(0, bit), fifth = vec_splats((unsigned char)0x10); /* bit 4 */
    st_v16u l = vec_perm(hv, hv, vec_xl(0, pick_lo)), u = vec_perm(hv, hv, vec_xl(0, pick_hi));
    *lo = vec_or(*lo, vec_and((st_v16u)vec_cmpeq(vec_and(l, b), b), fifth));
    *hi = vec_or(*hi, vec_and((st_v16u)vec_cmpeq(vec_and(u, b), b), fifth));
}

/* sum of 32 activation levels (2 vectors), as 4 int lanes added to acc */
static inline st_v4i vsx_sum_s8(st_v16s y0, st_v16s y1, st_v4i acc) {
    return vec_sum4s(y1, vec_sum4s(y0, acc));
}

/* ---- dot kernels ------------------------------------------------------------------------ */

#define ST_VSX_ROW(x, stride, j) ((const char *)(x) + (size_t)(j) * (stride))

/* Unsigned weight levels (lo, hi) with an offset `off` (levels - off are the values):
 * isum = sum(q*y) - off*sum(y). Used by Q4_0 (off 8) and Q5_0 (off 16). */
static inline st_v4i vsx_dot_u_off(st_v16u lo, st_v16u hi, const int8_t *y, int off) {
    st_v16s y0 = st_vsx_load_s8(y), y1 = st_vsx_load_s8(y + 16);
    st_v4i zero = vec_splats(0);
    st_v4i p = vec_msum(y1, hi, vec_msum(y0, lo, zero));
    if (off) p = vec_sub(p, vec_mul(vsx_sum_s8(y0, y1, zero), vec_splats(off)));
    return p;
}

#define ST_VSX_DOT_SYM(name, WBLOCK, QK, DECODE, OFF)                                                \
    static void name(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {        \
        const WBLOCK *w = vw;                                                                         \
        st_v4f acc[ST_CPU_MAX_NR];                                                                    \
        for (int j = 0; j < nr; j++) acc[j] = vec_splats(0.0f);                                       \
        for (int64_t b = 0; b < k / (QK); b++) {                                                      \
            st_v16u lo, hi;                                                                           \
            DECODE;                                                                                   \
            float dw = st_vsx_h2f(w[b].d);                                                            \
            for (int j = 0; j < nr; j++) {                                                            \
                const st_block_q8_0 *y = (const st_block_q8_0 *)ST_VSX_ROW(vx, xs, j) + b;            \
                st_v4i p = vsx_dot_u_off(lo, hi, y->qs, OFF);                                         \
                acc[j] = vec_madd(vec_ctf(p, 0), vec_splats(dw * st_vsx_h2f(y->d)), acc[j]);          \
            }                                                                                         \
        }                                                                                             \
        for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]);                                      \
    }

ST_VSX_DOT_SYM(vsx_vec_dot_q4_0, st_block_q4_0, ST_QK4_0, vsx_nibbles(w[b].qs, &lo, &hi), 8)
ST_VSX_DOT_SYM(vsx_vec_dot_q5_0, st_block_q5_0, ST_QK5_0,
               vsx_nibbles(w[b].qs, &lo, &hi);
               vsx_add_q5_bits(w[b].qh, &lo, &hi), 16)

/* Affine formats (value = d*q + m) against Q8_1: d*dy*sum(q*y) + m*s_y. */
#define ST_VSX_DOT_AFF(name, WBLOCK, QK, DECODE)                                                     \
    static void name(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {        \
        const WBLOCK *w = vw;                                                                         \
        st_v4f acc[ST_CPU_MAX_NR];                                                                    \
        float accm[ST_CPU_MAX_NR];                                                                    \
        for (int j = 0; j < nr; j++) {                                                                \
            acc[j] = vec_splats(0.0f);                                                                \
            accm[j] = 0.0f;                                                                           \
        }                                                                                             \
        for (int64_t b = 0; b < k / (QK); b++) {                                                      \
            st_v16u lo, hi;                                                                           \
            DECODE;                                                                                   \
            float dw = st_vsx_h2f(w[b].d), mw = st_vsx_h2f(w[b].m);                                   \
            for (int j = 0; j < nr; j++) {                                                            \
                const st_block_q8_1 *y = (const st_block_q8_1 *)ST_VSX_ROW(vx, xs, j) + b;            \
                st_v4i p = vsx_dot_u_off(lo, hi, y->qs, 0);                                           \
                acc[j] = vec_madd(vec_ctf(p, 0), vec_splats(dw * st_vsx_h2f(y->d)), acc[j]);          \
                accm[j] += mw * st_vsx_h2f(y->s);                                                     \
            }                                                                                         \
        }                                                                                             \
        for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]) + accm[j];                            \
    }

ST_VSX_DOT_AFF(vsx_vec_dot_q4_1, st_block_q4_1, ST_QK4_1, vsx_nibbles(w[b].qs, &lo, &hi))
ST_VSX_DOT_AFF(vsx_vec_dot_q5_1, st_block_q5_1, ST_QK5_1,
               vsx_nibbles(w[b].qs, &lo, &hi);
               vsx_add_q5_bits(w[b].qh, &lo, &hi))

/* Signed weight levels (w0 = elements 0..15, w1 = 16..31) against Q8_0. */
#define ST_VSX_DOT_S8(name, WBLOCK, QK, DECODE)                                                      \
    static void name(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {        \
        const WBLOCK *w = vw;                                                                         \
        st_v4f acc[ST_CPU_MAX_NR];                                                                    \
        for (int j = 0; j < nr; j++) acc[j] = vec_splats(0.0f);                                       \
        for (int64_t b = 0; b < k / (QK); b++) {                                                      \
            st_v16s w0, w1;                                                                           \
            DECODE;                                                                                   \
            float dw = st_vsx_h2f(w[b].d);                                                            \
            for (int j = 0; j < nr; j++) {                                                            \
                const st_block_q8_0 *y = (const st_block_q8_0 *)ST_VSX_ROW(vx, xs, j) + b;            \
                st_v4i p = st_vsx_dot_s8s8(w0, st_vsx_load_s8(y->qs), vec_splats(0));                \
                p = st_vsx_dot_s8s8(w1, st_vsx_load_s8(y->qs + 16), p);                               \
                acc[j] = vec_madd(vec_ctf(p, 0), vec_splats(dw * st_vsx_h2f(y->d)), acc[j]);          \
            }                                                                                         \
        }                                                                                             \
        for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]);                                      \
    }

ST_VSX_DOT_S8(vsx_vec_dot_q8_0, st_block_q8_0, ST_QK8_0,
              w0 = st_vsx_load_s8(w[b].qs);
              w1 = st_vsx_load_s8(w[b].qs + 16))

/* IQ4_NL: each nibble indexes the 16 non-linear levels (a byte permute). */
static inline void vsx_iq4_levels(const uint8_t *qs, st_v16s tbl, st_v16s *w0, st_v16s *w1) {
    st_v16u lo, hi;
    vsx_nibbles(qs, &lo, &hi);
    *w0 = vec_perm(tbl, tbl, lo);
    *w1 = vec_perm(tbl, tbl, hi);
}

ST_VSX_DOT_S8(vsx_vec_dot_iq4_nl, st_block_iq4_nl, ST_QK4_NL,
              vsx_iq4_levels(w[b].qs, st_vsx_load_s8(st_iq4nl_values), &w0, &w1))

static void set_slot(st_cpu_kernels *k, uint32_t type, uint32_t vec_type, st_cpu_from_float_fn ff,
                     st_cpu_vec_dot_fn vd) {
    k->wt[type].vec_type = vec_type;
    k->wt[type].from_float = ff;
    k->wt[type].vec_dot = vd;
}

void st_vsx_fill_legacy(st_cpu_kernels *k) {
    set_slot(k, ST_TYPE_Q4_0, ST_TYPE_Q8_0, vsx_q8_0_from_float, vsx_vec_dot_q4_0);
    set_slot(k, ST_TYPE_Q5_0, ST_TYPE_Q8_0, vsx_q8_0_from_float, vsx_vec_dot_q5_0);
    set_slot(k, ST_TYPE_Q8_0, ST_TYPE_Q8_0, vsx_q8_0_from_float, vsx_vec_dot_q8_0);
    set_slot(k, ST_TYPE_IQ4_NL, ST_TYPE_Q8_0, vsx_q8_0_from_float, vsx_vec_dot_iq4_nl);
    set_slot(k, ST_TYPE_Q4_1, ST_TYPE_Q8_1, vsx_q8_1_from_float, vsx_vec_dot_q4_1);
    set_slot(k, ST_TYPE_Q5_1, ST_TYPE_Q8_1, vsx_q8_1_from_float, vsx_vec_dot_q5_1);
}
