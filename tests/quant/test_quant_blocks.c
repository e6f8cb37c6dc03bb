/* SPDX-License-Identifier: Apache-2.0 */
/* Hand-built blocks decode to the exact floats the GGUF format defines. Each block is
 * written byte by byte from the format's description (restated here independently of the
 * library), and a few elements are also checked against values computed by hand. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "quant/quant.h"
#include "st_check.h"

static float out[256];

static void dequant(uint32_t type, const void *blk, int n) {
    for (int i = 0; i < 256; i++) out[i] = -12345.0f; /* poison */
    ST_CHECK(st_dequantize_row(type, blk, out, n) == 0);
}

static int count_mismatch(const float *expect, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != expect[i]) {
            if (bad < 5) fprintf(stderr, "  element %d: got %.9g expected %.9g\n", i, out[i], expect[i]);
            bad++;
        }
    return bad;
}

static void test_q8_0(void) {
    st_block_q8_0 b;
    b.d = 0x3800; /* 0.5 */
    for (int j = 0; j < 32; j++) b.qs[j] = (int8_t)(j * 8 - 128);
    dequant(ST_TYPE_Q8_0, &b, 32);
    float e[32];
    for (int j = 0; j < 32; j++) e[j] = 0.5f * (float)(j * 8 - 128);
    ST_CHECK(count_mismatch(e, 32) == 0);
    ST_CHECK(out[0] == -64.0f && out[31] == 60.0f);
    /* the dot product dequantizes the same way */
    float x[32];
    double ref = 0;
    for (int j = 0; j < 32; j++) {
        x[j] = (float)(j % 5) - 2.0f;
        ref += (double)e[j] * x[j];
    }
    ST_CHECK_NEAR(st_dot_row_ref(ST_TYPE_Q8_0, &b, x, 32), ref, 1e-9);
}

static void test_q8_1(void) {
    st_block_q8_1 b;
    b.d = 0x4000; /* 2.0 */
    b.s = 0;
    for (int j = 0; j < 32; j++) b.qs[j] = (int8_t)(j - 16);
    dequant(ST_TYPE_Q8_1, &b, 32);
    ST_CHECK(out[0] == -32.0f && out[16] == 0.0f && out[31] == 30.0f);
}

static void test_q4_0(void) {
    st_block_q4_0 b;
    b.d = 0x4000; /* 2.0 */
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    dequant(ST_TYPE_Q4_0, &b, 32);
    float e[32];
    for (int j = 0; j < 16; j++) {
        e[j] = 2.0f * (float)(j - 8);
        e[j + 16] = 2.0f * (float)(15 - j - 8);
    }
    ST_CHECK(count_mismatch(e, 32) == 0);
    ST_CHECK(out[0] == -16.0f && out[5] == -6.0f && out[16] == 14.0f && out[31] == -16.0f);
}

static void test_q4_1(void) {
    st_block_q4_1 b;
    b.d = 0x3800; /* 0.5 */
    b.m = 0xc000; /* -2 */
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | (3 << 4));
    dequant(ST_TYPE_Q4_1, &b, 32);
    ST_CHECK(out[0] == -2.0f && out[15] == 5.5f && out[16] == -0.5f && out[31] == -0.5f);
}

static void test_q5_0(void) {
    st_block_q5_0 b;
    b.d = 0x3c00; /* 1.0 */
    memset(b.qs, 0, sizeof b.qs);
    b.qs[0] = 0x3f; /* element 0 low = 15, element 16 low = 3 */
    b.qs[1] = 0x02;
    /* qh bits: element 0 (bit 0) and element 16 (bit 16) set; little-endian bytes */
    b.qh[0] = 0x01;
    b.qh[1] = 0x00;
    b.qh[2] = 0x01;
    b.qh[3] = 0x80; /* bit 31: element 31 */
    dequant(ST_TYPE_Q5_0, &b, 32);
    ST_CHECK(out[0] == (float)(15 + 16 - 16));  /* 15 */
    ST_CHECK(out[16] == (float)(3 + 16 - 16));  /* 3 */
    ST_CHECK(out[1] == (float)(2 - 16));        /* -14 */
    ST_CHECK(out[17] == -16.0f);
    ST_CHECK(out[31] == 0.0f);                  /* 0 | 16 - 16 */
    ST_CHECK(out[15] == -16.0f);
}

static void test_q5_1(void) {
    st_block_q5_1 b;
    b.d = 0x3800; /* 0.5 */
    b.m = 0x3c00; /* 1.0 */
    memset(b.qs, 0xff, sizeof b.qs);
    memset(b.qh, 0, sizeof b.qh);
    b.qh[1] = 0x02; /* bit 9: element 9 gets +16 */
    dequant(ST_TYPE_Q5_1, &b, 32);
    ST_CHECK(out[0] == 8.5f);             /* 0.5*15 + 1 */
    ST_CHECK(out[9] == 0.5f * 31.0f + 1.0f); /* 16.5 */
    ST_CHECK(out[25] == 8.5f);
}

/* Spec restated: Q2_K/Q3_K element e -> (qs byte, shift, sub-block). */
static void k2_pos(int e, int *byte, int *shift, int *sub) {
    int h = e / 128, g = (e % 128) / 32, l = e % 32;
    *byte = 32 * h + l;
    *shift = 2 * g;
    *sub = 8 * h + 2 * g + l / 16;
}

static void test_q2_K(void) {
    st_block_q2_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800;    /* 0.5 */
    b.dmin = 0x3400; /* 0.25 */
    int sc[16], mn[16], q[256];
    for (int s = 0; s < 16; s++) {
        sc[s] = (s * 5 + 1) % 16;
        mn[s] = (s * 3) % 16;
        b.scales[s] = (uint8_t)(sc[s] | (mn[s] << 4));
    }
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 7 + e / 64) % 4;
        int byte, shift, sub;
        k2_pos(e, &byte, &shift, &sub);
        b.qs[byte] |= (uint8_t)(q[e] << shift);
    }
    dequant(ST_TYPE_Q2_K, &b, 256);
    float e[256];
    for (int i = 0; i < 256; i++) {
        int byte, shift, sub;
        k2_pos(i, &byte, &shift, &sub);
        e[i] = 0.5f * (float)sc[sub] * (float)q[i] - 0.25f * (float)mn[sub];
    }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand: element 0: sub 0 (sc 1, min 0), q 0 -> 0; element 33: sub 2 (sc 11, min 6),
     * q = (231 + 0) % 4 = 3 -> 0.5*11*3 - 0.25*6 = 15 */
    ST_CHECK(out[0] == 0.0f);
    ST_CHECK(out[33] == 15.0f);
}

static void test_q3_K(void) {
    st_block_q3_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    int sc[16], q[256];
    for (int s = 0; s < 16; s++) {
        sc[s] = (s * 13 + 5) % 64 - 32; /* signed 6-bit */
        int u = sc[s] + 32;
        /* low nibble: s < 8 -> low nibble of scales[s]; s >= 8 -> high nibble of scales[s-8] */
        if (s < 8)
            b.scales[s] |= (uint8_t)(u & 15);
        else
            b.scales[s - 8] |= (uint8_t)((u & 15) << 4);
        /* high 2 bits: scales[8 + s%4], bits 2*(s/4) */
        b.scales[8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
    }
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 5 + 3) % 8 - 4; /* -4..3 */
        int byte, shift, sub;
        k2_pos(e, &byte, &shift, &sub);
        int u = q[e] + 4; /* low 2 bits in qs, bit 2 in hmask (set = no -4) */
        b.qs[byte] |= (uint8_t)((u & 3) << shift);
        if (u & 4) b.hmask[e % 32] |= (uint8_t)(1u << ((e / 128) * 4 + (e % 128) / 32));
    }
    dequant(ST_TYPE_Q3_K, &b, 256);
    float e[256];
    for (int i = 0; i < 256; i++) {
        int byte, shift, sub;
        k2_pos(i, &byte, &shift, &sub);
        e[i] = 0.5f * (float)sc[sub] * (float)q[i];
    }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand: element 0: sub 0, scale 5-32 = -27, q = 3-4 = -1 -> 0.5*27 = 13.5 */
    ST_CHECK(out[0] == 13.5f);
}

/* 6-bit (scale, min) pairs of Q4_K/Q5_K, packed by hand for the values below. */
static const int k4_sc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
static const int k4_m[8] = {0, 1, 2, 3, 20, 40, 5, 63};
static const uint8_t k4_packed[12] = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x81, 0x02, 0xC3, 0x41, 0x81, 0x52, 0xFF};

static void test_q4_K(void) {
    st_block_q4_K b;
    b.d = 0x3c00;    /* 1.0 */
    b.dmin = 0x3800; /* 0.5 */
    memcpy(b.scales, k4_packed, 12);
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) b.qs[32 * p + l] = (uint8_t)((l & 15) | ((15 - (l & 15)) << 4));
    dequant(ST_TYPE_Q4_K, &b, 256);
    float e[256];
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            e[64 * p + l] = (float)k4_sc[2 * p] * (float)(l & 15) - 0.5f * (float)k4_m[2 * p];
            e[64 * p + 32 + l] = (float)k4_sc[2 * p + 1] * (float)(15 - (l & 15)) - 0.5f * (float)k4_m[2 * p + 1];
        }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand: element 200 = 64*3 + 8: sub 6 (sc 50, m 5), q 8 -> 400 - 2.5 = 397.5;
     * element 255 = 64*3 + 32 + 31: sub 7 (63, 63), q 15-15 = 0 -> -31.5 */
    ST_CHECK(out[200] == 397.5f);
    ST_CHECK(out[255] == -31.5f);
    ST_CHECK(out[40] == 2.0f * 7.0f - 0.5f); /* sub 1 (2, 1), q = 15-8 */
}

static void test_q5_K(void) {
    st_block_q5_K b;
    b.d = 0x3800;    /* 0.5 */
    b.dmin = 0x3c00; /* 1.0 */
    memcpy(b.scales, k4_packed, 12);
    memset(b.qh, 0, sizeof b.qh);
    int q[256];
    for (int e = 0; e < 256; e++) q[e] = (e * 11 + 7) % 32;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            int q0 = q[64 * p + l], q1 = q[64 * p + 32 + l];
            b.qs[32 * p + l] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
            b.qh[l] |= (uint8_t)(((q0 >> 4) << (2 * p)) | ((q1 >> 4) << (2 * p + 1)));
        }
    dequant(ST_TYPE_Q5_K, &b, 256);
    float e[256];
    for (int i = 0; i < 256; i++) {
        int s = i / 32;
        e[i] = 0.5f * (float)k4_sc[s] * (float)q[i] - (float)k4_m[s];
    }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand: element 1: q = 18, sub 0 (1, 0) -> 9 */
    ST_CHECK(out[1] == 9.0f);
}

static void test_q6_K(void) {
    st_block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    int q[256];
    for (int s = 0; s < 16; s++) b.scales[s] = (int8_t)(s * 9 - 70);
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 7 + 3) % 64 - 32;
        int u = q[e] + 32;
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        int qlb = 64 * h + l + 32 * (k & 1); /* k = 0,1: low nibbles; k = 2,3: high */
        b.ql[qlb] |= (uint8_t)((u & 15) << (4 * (k >> 1)));
        b.qh[32 * h + l] |= (uint8_t)((u >> 4) << (2 * k));
    }
    dequant(ST_TYPE_Q6_K, &b, 256);
    float e[256];
    for (int i = 0; i < 256; i++) {
        int h = i / 128, k = (i % 128) / 32, l = i % 32;
        int s = 8 * h + l / 16 + 2 * k;
        e[i] = 0.25f * (float)b.scales[s] * (float)q[i];
    }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand with explicit bytes: element 0 = low nibble of ql[0] + bits 0-1 of qh[0];
     * element 96 = high nibble of ql[32] + bits 6-7 of qh[0], scale index 6 */
    st_block_q6_K c;
    memset(&c, 0, sizeof c);
    c.d = 0x3c00;
    c.ql[0] = 0x05;  /* element 0 low = 5 */
    c.qh[0] = 0xC2;  /* element 0 high = 2 (-> 37 - 32 = 5), element 96 high = 3 */
    c.ql[32] = 0xA0; /* element 96 low = 10 -> 58 - 32 = 26 */
    c.scales[0] = 3;
    c.scales[6] = -2;
    dequant(ST_TYPE_Q6_K, &c, 256);
    ST_CHECK(out[0] == 15.0f);
    ST_CHECK(out[96] == -52.0f);
    ST_CHECK(out[1] == 3.0f * -32.0f);
}

static void test_q8_K(void) {
    st_block_q8_K b;
    memset(&b, 0, sizeof b);
    b.d = 0.125f;
    for (int j = 0; j < 256; j++) b.qs[j] = (int8_t)(j - 128);
    dequant(ST_TYPE_Q8_K, &b, 256);
    ST_CHECK(out[0] == -16.0f && out[255] == 127.0f * 0.125f);
}

static void test_iq4_nl(void) {
    static const int8_t lv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int i = 0; i < 16; i++) ST_CHECK(st_iq4nl_values[i] == lv[i]);
    st_block_iq4_nl b;
    b.d = 0x3800; /* 0.5 */
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    dequant(ST_TYPE_IQ4_NL, &b, 32);
    float e[32];
    for (int j = 0; j < 16; j++) {
        e[j] = 0.5f * (float)lv[j];
        e[j + 16] = 0.5f * (float)lv[15 - j];
    }
    ST_CHECK(count_mismatch(e, 32) == 0);
    ST_CHECK(out[0] == -63.5f && out[16] == 56.5f && out[8] == 0.5f);
}

static void test_iq4_xs(void) {
    static const int ls[8] = {0, 1, 31, 32, 33, 47, 62, 63};
    st_block_iq4_xs b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    for (int s = 0; s < 8; s++) {
        b.scales_l[s / 2] |= (uint8_t)((ls[s] & 15) << (4 * (s % 2)));
        b.scales_h = (uint16_t)(b.scales_h | ((ls[s] >> 4) << (2 * s)));
    }
    for (int j = 0; j < 128; j++) b.qs[j] = (uint8_t)((j % 16) | ((j * 3 % 16) << 4));
    dequant(ST_TYPE_IQ4_XS, &b, 256);
    float e[256];
    for (int s = 0; s < 8; s++)
        for (int j = 0; j < 16; j++) {
            uint8_t q = b.qs[16 * s + j];
            e[32 * s + j] = 0.5f * (float)(ls[s] - 32) * (float)st_iq4nl_values[q & 15];
            e[32 * s + 16 + j] = 0.5f * (float)(ls[s] - 32) * (float)st_iq4nl_values[q >> 4];
        }
    ST_CHECK(count_mismatch(e, 256) == 0);
    /* by hand: scales_l = {0x10, 0x0F, 0xF1, 0xFE}, scales_h bits: s 2..7 = 1,2,2,2,3,3 */
    ST_CHECK(b.scales_l[0] == 0x10 && b.scales_l[1] == 0x0F && b.scales_l[2] == 0xF1 && b.scales_l[3] == 0xFE);
    ST_CHECK(b.scales_h == 0xFA90);
    /* element 0: sub 0 (ls 0 -> -32), q 0 (-127): 0.5 * -32 * -127 = 2032 */
    ST_CHECK(out[0] == 2032.0f);
    /* sub 3 has ls 32: all zero */
    for (int j = 96; j < 128; j++) ST_CHECK(out[j] == 0.0f);
}

/* MXFP4: levels are E2M1 doubled, the E8M0 scale halved: e = 128 gives the doubled levels
 * themselves, e = 127 the E2M1 values (0.5 1 1.5 2 3 4 6), e = 0 and 1 subnormal scales. */
static void test_mxfp4(void) {
    static const int8_t lv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    for (int i = 0; i < 16; i++) ST_CHECK(st_mxfp4_values[i] == lv[i]);
    ST_CHECK(sizeof(st_block_mxfp4) == 17);
    st_block_mxfp4 b;
    b.e = 128;
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    dequant(ST_TYPE_MXFP4, &b, 32);
    ST_CHECK(out[7] == 12.0f && out[16] == -12.0f && out[15] == -12.0f && out[31] == 0.0f);
    b.e = 127;
    dequant(ST_TYPE_MXFP4, &b, 32);
    ST_CHECK(out[1] == 0.5f && out[5] == 3.0f && out[7] == 6.0f && out[22] == -0.5f && out[20] == -1.5f);
    ST_CHECK(st_e8m0_half_to_f32(0) == ldexpf(1.0f, -128) && st_e8m0_half_to_f32(1) == ldexpf(1.0f, -127));
    ST_CHECK(st_e8m0_half_to_f32(254) == ldexpf(1.0f, 126));
    /* quantizing the E2M1 values at scale 2^-1 gives them back exactly */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = 0.5f * (float)lv[j % 16] * (j < 16 ? 1.0f : -1.0f);
    st_block_mxfp4 q;
    ST_CHECK(st_quantize_row(ST_TYPE_MXFP4, x, &q, 32) == 0);
    ST_CHECK(q.e == 127);
    dequant(ST_TYPE_MXFP4, &q, 32);
    ST_CHECK(count_mismatch(x, 32) == 0);
}

int main(void) {
    test_mxfp4();
    test_q8_0();
    test_q8_1();
    test_q4_0();
    test_q4_1();
    test_q5_0();
    test_q5_1();
    test_q2_K();
    test_q3_K();
    test_q4_K();
    test_q5_K();
    test_q6_K();
    test_q8_K();
    test_iq4_nl();
    test_iq4_xs();
    return st_check_result("test_quant_blocks");
}
