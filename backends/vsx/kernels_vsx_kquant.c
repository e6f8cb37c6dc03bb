/* SPDX-License-Identifier: Apache-2.0 */
/* POWER9 VSX kernels of the 256-element formats: the Q8_K activation quantizer and the dot
 * products of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights with Q8_K rows.
 *
 * Weight levels are made unsigned (Q3_K/Q6_K add their offset 4/32 and take it back through
 * the activations' 16-element sums, bsums) so vmsummbm multiplies them with the signed
 * activation bytes; a sub-block's 4 int lanes are scaled by its integer scale and summed in a
 * vector, converted to float once per block. Each weight block is decoded once for all nr
 * activation rows; each row's accumulation order does not depend on nr. */
#include "vsx/kernels_vsx.h"

#include "cpu/cpu_quant_util.h"

#define ST_VSX_ROWK(x, stride, j, b) ((const st_block_q8_K *)((const char *)(x) + (size_t)(j) * (stride)) + (b))

/* ---- activation quantizer (bit-exact with the scalar one) ------------------------------ */

static void vsx_q8_k_from_float(const float *x, void *vy, int64_t k) {
    st_block_q8_K *y = vy;
    for (int64_t b = 0; b < k / ST_QK_K; b++, x += ST_QK_K) {
        st_v4f amax = vec_splats(0.0f);
        for (int i = 0; i < ST_QK_K; i += 4) amax = vec_max(amax, vec_abs(vec_xl(0, x + i)));
        float a = amax[0];
        for (int i = 1; i < 4; i++) a = amax[i] > a ? amax[i] : a;
        float id = a != 0.0f ? 127.0f / a : 0.0f;
        y[b].d = a != 0.0f ? a / 127.0f : 0.0f;
        st_v4f vid = vec_splats(id);
        for (int g = 0; g < ST_QK_K / 16; g++) {
            const float *xg = x + 16 * g;
            st_v4i q0 = vec_cts(vec_rint(vec_mul(vec_xl(0, xg), vid)), 0);
            st_v4i q1 = vec_cts(vec_rint(vec_mul(vec_xl(0, xg + 4), vid)), 0);
            st_v4i q2 = vec_cts(vec_rint(vec_mul(vec_xl(0, xg + 8), vid)), 0);
            st_v4i q3 = vec_cts(vec_rint(vec_mul(vec_xl(0, xg + 12), vid)), 0);
            vec_xst(vec_pack(vec_pack(q0, q1), vec_pack(q2, q3)), 0, (signed char *)y[b].qs + 16 * g);
            y[b].bsums[g] = (int16_t)st_vsx_hsum_i(vec_add(vec_add(q0, q1), vec_add(q2, q3)));
        }
    }
}

/* ---- shared pieces ------------------------------------------------------------------------ */

/* acc += scale * sum_i q[i]*y[i] over 16 elements (q unsigned levels, y signed). */
static inline st_v4i vsx_scaled16(st_v16u q, const int8_t *y, int scale, st_v4i acc) {
    st_v4i p = vec_msum(st_vsx_load_s8(y), q, vec_splats(0));
    return vec_add(acc, vec_mul(p, vec_splats(scale)));
}

/* sum_g m[g] * bsums[g] over the 16 groups of a Q8_K block (m as 16 shorts), as 4 int lanes
 * (summed with the rest of the block, no horizontal sum per block). */
static inline st_v4i vsx_bsum_dot(const int16_t *bsums, st_v8s m0, st_v8s m1) {
    st_v8s b0 = vec_xl(0, bsums), b1 = vec_xl(0, bsums + 8);
    return vec_msum(b1, m1, vec_msum(b0, m0, vec_splats(0)));
}

static inline st_v16u vsx_bits(st_v16u v, unsigned shift, unsigned mask) {
    return vec_and(vec_sr(v, vec_splats((unsigned char)shift)), vec_splats((unsigned char)mask));
}

/* ---- Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scale and min each --------------------------- */

/* Levels of one Q4_K/Q5_K block: q[c][0..3] = elements 64c + 16*i .. (unsigned, 0..15/31). */
static inline void vsx_k4_levels(const uint8_t *qs, const uint8_t *qh, st_v16u q[4][4]) {
    st_v16u h0 = vec_splats((unsigned char)0), h1 = h0;
    if (qh) {
        h0 = st_vsx_load_u8(qh);
        h1 = st_vsx_load_u8(qh + 16);
    }
    for (int c = 0; c < 4; c++) {
        st_v16u a = st_vsx_load_u8(qs + 32 * c), b = st_vsx_load_u8(qs + 32 * c + 16);
        q[c][0] = vsx_bits(a, 0, 0xf);
        q[c][1] = vsx_bits(b, 0, 0xf);
        q[c][2] = vsx_bits(a, 4, 0xf);
        q[c][3] = vsx_bits(b, 4, 0xf);
        if (qh) {
            q[c][0] = vec_or(q[c][0], vec_sl(vsx_bits(h0, 2 * c, 1), vec_splats((unsigned char)4)));
            q[c][1] = vec_or(q[c][1], vec_sl(vsx_bits(h1, 2 * c, 1), vec_splats((unsigned char)4)));
            q[c][2] = vec_or(q[c][2], vec_sl(vsx_bits(h0, 2 * c + 1, 1), vec_splats((unsigned char)4)));
            q[c][3] = vec_or(q[c][3], vec_sl(vsx_bits(h1, 2 * c + 1, 1), vec_splats((unsigned char)4)));
        }
    }
}

/* Body shared by Q4_K (qh NULL) and Q5_K. */
static inline void vsx_dot_k45(const uint8_t *qs, const uint8_t *qh, const uint8_t *scales, float dw,
                               float dminw, int64_t b, const void *vx, size_t xs, int nr, st_v4f *acc,
                               st_v4f *accm) {
    st_v16u q[4][4];
    vsx_k4_levels(qs, qh, q);
    uint8_t sc[8], mn[8];
    st_cpu_k4_scales(scales, sc, mn);
    int16_t m16[16];
    for (int g = 0; g < 16; g++) m16[g] = mn[g / 2];
    st_v8s m0 = vec_xl(0, m16), m1 = vec_xl(0, m16 + 8);
    for (int j = 0; j < nr; j++) {
        const st_block_q8_K *y = ST_VSX_ROWK(vx, xs, j, b);
        st_v4i isum = vec_splats(0);
        for (int c = 0; c < 4; c++) {
            const int8_t *y8 = y->qs + 64 * c;
            st_v4i p0 = vec_msum(st_vsx_load_s8(y8 + 16), q[c][1],
                                 vec_msum(st_vsx_load_s8(y8), q[c][0], vec_splats(0)));
            st_v4i p1 = vec_msum(st_vsx_load_s8(y8 + 48), q[c][3],
                                 vec_msum(st_vsx_load_s8(y8 + 32), q[c][2], vec_splats(0)));
            isum = vec_add(isum, vec_add(vec_mul(p0, vec_splats((int)sc[2 * c])),
                                         vec_mul(p1, vec_splats((int)sc[2 * c + 1]))));
        }
        acc[j] = vec_madd(vec_ctf(isum, 0), vec_splats(y->d * dw), acc[j]);
        accm[j] = vec_madd(vec_ctf(vsx_bsum_dot(y->bsums, m0, m1), 0), vec_splats(y->d * dminw), accm[j]);
    }
}

static void vsx_vec_dot_q4_k(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_q4_K *w = vw;
    st_v4f acc[ST_CPU_MAX_NR], accm[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = accm[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++)
        vsx_dot_k45(w[b].qs, NULL, w[b].scales, st_vsx_h2f(w[b].d), st_vsx_h2f(w[b].dmin), b, vx, xs, nr, acc,
                    accm);
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(vec_sub(acc[j], accm[j]));
}

static void vsx_vec_dot_q5_k(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_q5_K *w = vw;
    st_v4f acc[ST_CPU_MAX_NR], accm[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = accm[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++)
        vsx_dot_k45(w[b].qs, w[b].qh, w[b].scales, st_vsx_h2f(w[b].d), st_vsx_h2f(w[b].dmin), b, vx, xs, nr,
                    acc, accm);
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(vec_sub(acc[j], accm[j]));
}

/* ---- Q6_K: 16 sub-blocks of 16, signed 8-bit scales, levels 0..63 with offset 32 ---------- */

static void vsx_vec_dot_q6_k(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_q6_K *w = vw;
    st_v4f acc[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        /* q[g] = the 16 levels of group g (elements 16g..16g+15) */
        st_v16u q[16];
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = w[b].ql + 64 * n, *qh = w[b].qh + 32 * n;
            st_v16u l0 = st_vsx_load_u8(ql), l1 = st_vsx_load_u8(ql + 16);
            st_v16u l2 = st_vsx_load_u8(ql + 32), l3 = st_vsx_load_u8(ql + 48);
            st_v16u h0 = st_vsx_load_u8(qh), h1 = st_vsx_load_u8(qh + 16);
            const st_v16u four = vec_splats((unsigned char)4);
            st_v16u *g = q + 8 * n;
            g[0] = vec_or(vsx_bits(l0, 0, 0xf), vec_sl(vsx_bits(h0, 0, 3), four));
            g[1] = vec_or(vsx_bits(l1, 0, 0xf), vec_sl(vsx_bits(h1, 0, 3), four));
            g[2] = vec_or(vsx_bits(l2, 0, 0xf), vec_sl(vsx_bits(h0, 2, 3), four));
            g[3] = vec_or(vsx_bits(l3, 0, 0xf), vec_sl(vsx_bits(h1, 2, 3), four));
            g[4] = vec_or(vsx_bits(l0, 4, 0xf), vec_sl(vsx_bits(h0, 4, 3), four));
            g[5] = vec_or(vsx_bits(l1, 4, 0xf), vec_sl(vsx_bits(h1, 4, 3), four));
            g[6] = vec_or(vsx_bits(l2, 4, 0xf), vec_sl(vsx_bits(h0, 6, 3), four));
            g[7] = vec_or(vsx_bits(l3, 4, 0xf), vec_sl(vsx_bits(h1, 6, 3), four));
        }
        int16_t sc32[16]; /* 32 * scale: the offset term through bsums */
        for (int g = 0; g < 16; g++) sc32[g] = (int16_t)(32 * w[b].scales[g]);
        st_v8s o0 = vec_xl(0, sc32), o1 = vec_xl(0, sc32 + 8);
        float dw = st_vsx_h2f(w[b].d);
        for (int j = 0; j < nr; j++) {
            const st_block_q8_K *y = ST_VSX_ROWK(vx, xs, j, b);
            st_v4i isum = vec_splats(0);
            for (int g = 0; g < 16; g++) isum = vsx_scaled16(q[g], y->qs + 16 * g, w[b].scales[g], isum);
            isum = vec_sub(isum, vsx_bsum_dot(y->bsums, o0, o1));
            acc[j] = vec_madd(vec_ctf(isum, 0), vec_splats(y->d * dw), acc[j]);
        }
    }
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]);
}

/* ---- Q2_K: 16 sub-blocks of 16, 2-bit levels, 4-bit scale and min ------------------------- */

static void vsx_vec_dot_q2_k(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_q2_K *w = vw;
    st_v4f acc[ST_CPU_MAX_NR], accm[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = accm[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        /* group g = 8n + 2j + h holds (qs[32n + 16h + l] >> 2j) & 3, elements 16g.. */
        st_v16u q[16];
        for (int n = 0; n < 2; n++) {
            st_v16u a = st_vsx_load_u8(w[b].qs + 32 * n), c = st_vsx_load_u8(w[b].qs + 32 * n + 16);
            for (int j = 0; j < 4; j++) {
                q[8 * n + 2 * j] = vsx_bits(a, 2 * j, 3);
                q[8 * n + 2 * j + 1] = vsx_bits(c, 2 * j, 3);
            }
        }
        int16_t m16[16];
        for (int g = 0; g < 16; g++) m16[g] = (int16_t)(w[b].scales[g] >> 4);
        st_v8s m0 = vec_xl(0, m16), m1 = vec_xl(0, m16 + 8);
        float dw = st_vsx_h2f(w[b].d), dminw = st_vsx_h2f(w[b].dmin);
        for (int j = 0; j < nr; j++) {
            const st_block_q8_K *y = ST_VSX_ROWK(vx, xs, j, b);
            st_v4i isum = vec_splats(0);
            for (int g = 0; g < 16; g++) isum = vsx_scaled16(q[g], y->qs + 16 * g, w[b].scales[g] & 0xf, isum);
            acc[j] = vec_madd(vec_ctf(isum, 0), vec_splats(y->d * dw), acc[j]);
            accm[j] = vec_madd(vec_ctf(vsx_bsum_dot(y->bsums, m0, m1), 0), vec_splats(y->d * dminw), accm[j]);
        }
    }
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(vec_sub(acc[j], accm[j]));
}

/* ---- Q3_K: 16 sub-blocks of 16, 2 low bits + a high bit (clear = -4), 6-bit signed scales -- */

static void vsx_vec_dot_q3_k(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_q3_K *w = vw;
    st_v4f acc[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        /* level + 4 = low2 | hbit << 2, in 0..7; group g = 8n + 2j + h as in Q2_K, high bit
         * 4n + j of hmask[16h + l] */
        st_v16u q[16];
        st_v16u m0 = st_vsx_load_u8(w[b].hmask), m1 = st_vsx_load_u8(w[b].hmask + 16);
        for (int n = 0; n < 2; n++) {
            st_v16u a = st_vsx_load_u8(w[b].qs + 32 * n), c = st_vsx_load_u8(w[b].qs + 32 * n + 16);
            for (int j = 0; j < 4; j++) {
                unsigned bit = (unsigned)(4 * n + j);
                const st_v16u two = vec_splats((unsigned char)2);
                q[8 * n + 2 * j] = vec_or(vsx_bits(a, 2 * j, 3), vec_sl(vsx_bits(m0, bit, 1), two));
                q[8 * n + 2 * j + 1] = vec_or(vsx_bits(c, 2 * j, 3), vec_sl(vsx_bits(m1, bit, 1), two));
            }
        }
        int8_t sc[16];
        st_cpu_q3k_scales(w[b].scales, sc);
        int16_t sc4[16];
        for (int g = 0; g < 16; g++) sc4[g] = (int16_t)(4 * sc[g]);
        st_v8s o0 = vec_xl(0, sc4), o1 = vec_xl(0, sc4 + 8);
        float dw = st_vsx_h2f(w[b].d);
        for (int j = 0; j < nr; j++) {
            const st_block_q8_K *y = ST_VSX_ROWK(vx, xs, j, b);
            st_v4i isum = vec_splats(0);
            for (int g = 0; g < 16; g++) isum = vsx_scaled16(q[g], y->qs + 16 * g, sc[g], isum);
            isum = vec_sub(isum, vsx_bsum_dot(y->bsums, o0, o1));
            acc[j] = vec_madd(vec_ctf(isum, 0), vec_splats(y->d * dw), acc[j]);
        }
    }
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]);
}

/* ---- IQ4_XS: 8 sub-blocks of 32 on the non-linear levels, 6-bit scales (bias 32) ------------ */

static void vsx_vec_dot_iq4_xs(int64_t k, const void *vw, const void *vx, size_t xs, int nr, float *s) {
    const st_block_iq4_xs *w = vw;
    const st_v16s tbl = st_vsx_load_s8(st_iq4nl_values);
    const st_v16u lowmask = vec_splats((unsigned char)0x0f), four = vec_splats((unsigned char)4);
    st_v4f acc[ST_CPU_MAX_NR];
    for (int j = 0; j < nr; j++) acc[j] = vec_splats(0.0f);
    for (int64_t b = 0; b < k / ST_QK_K; b++) {
        st_v16s lv[8][2];
        int ls[8];
        for (int ib = 0; ib < 8; ib++) {
            st_v16u qv = st_vsx_load_u8(w[b].qs + 16 * ib);
            lv[ib][0] = vec_perm(tbl, tbl, vec_and(qv, lowmask));
            lv[ib][1] = vec_perm(tbl, tbl, vec_sr(qv, four));
            ls[ib] = st_cpu_iq4xs_scale(&w[b], ib) - 32;
        }
        float dw = st_vsx_h2f(w[b].d);
        for (int j = 0; j < nr; j++) {
            const st_block_q8_K *y = ST_VSX_ROWK(vx, xs, j, b);
            st_v4i isum = vec_splats(0);
            for (int ib = 0; ib < 8; ib++) {
                st_v4i p = st_vsx_dot_s8s8(lv[ib][0], st_vsx_load_s8(y->qs + 32 * ib), vec_splats(0));
                p = st_vsx_dot_s8s8(lv[ib][1], st_vsx_load_s8(y->qs + 32 * ib + 16), p);
                isum = vec_add(isum, vec_mul(p, vec_splats(ls[ib])));
            }
            acc[j] = vec_madd(vec_ctf(isum, 0), vec_splats(y->d * dw), acc[j]);
        }
    }
    for (int j = 0; j < nr; j++) s[j] = st_vsx_hsum(acc[j]);
}

void st_vsx_fill_kquant(st_cpu_kernels *k) {
    static const struct {
        uint32_t type;
        st_cpu_vec_dot_fn dot;
    } slots[] = {
        {ST_TYPE_Q2_K, vsx_vec_dot_q2_k}, {ST_TYPE_Q3_K, vsx_vec_dot_q3_k}, {ST_TYPE_Q4_K, vsx_vec_dot_q4_k},
        {ST_TYPE_Q5_K, vsx_vec_dot_q5_k}, {ST_TYPE_Q6_K, vsx_vec_dot_q6_k}, {ST_TYPE_IQ4_XS, vsx_vec_dot_iq4_xs},
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        k->wt[slots[i].type].vec_type = ST_TYPE_Q8_K;
        k->wt[slots[i].type].from_float = vsx_q8_k_from_float;
        k->wt[slots[i].type].vec_dot = slots[i].dot;
    }
}
