/* SPDX-License-Identifier: Apache-2.0 */
/* Type table of GGUF tensor types: names, block sizes and bytes per block. */
#include "quant/quant.h"

#include <ctype.h>
#include <string.h>

/* Non-linear levels shared by IQ4_NL and IQ4_XS (fixed by the file format). */
const int8_t st_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

/* Static size checks: the block structs must be byte-exact with the file format. */
_Static_assert(sizeof(st_block_q4_0) == 18, "q4_0 size");
_Static_assert(sizeof(st_block_q4_1) == 20, "q4_1 size");
_Static_assert(sizeof(st_block_q5_0) == 22, "q5_0 size");
_Static_assert(sizeof(st_block_q5_1) == 24, "q5_1 size");
_Static_assert(sizeof(st_block_q8_0) == 34, "q8_0 size");
_Static_assert(sizeof(st_block_q8_1) == 36, "q8_1 size");
_Static_assert(sizeof(st_block_iq4_nl) == 18, "iq4_nl size");
_Static_assert(sizeof(st_block_q2_K) == 84, "q2_K size");
_Static_assert(sizeof(st_block_q3_K) == 110, "q3_K size");
_Static_assert(sizeof(st_block_q4_K) == 144, "q4_K size");
_Static_assert(sizeof(st_block_q5_K) == 176, "q5_K size");
_Static_assert(sizeof(st_block_q6_K) == 210, "q6_K size");
_Static_assert(sizeof(st_block_q8_K) == 292, "q8_K size");
_Static_assert(sizeof(st_block_iq4_xs) == 136, "iq4_xs size");
_Static_assert(sizeof(st_block_mxfp4) == 17, "mxfp4 size");

static const st_type_info g_types[ST_TYPE_COUNT] = {
    [ST_TYPE_F32] = {"F32", 1, 4, 0},
    [ST_TYPE_F16] = {"F16", 1, 2, 0},
    [ST_TYPE_BF16] = {"BF16", 1, 2, 0},
    [ST_TYPE_I8] = {"I8", 1, 1, 0},
    [ST_TYPE_I16] = {"I16", 1, 2, 0},
    [ST_TYPE_I32] = {"I32", 1, 4, 0},
    [ST_TYPE_Q4_0] = {"Q4_0", ST_QK4_0, sizeof(st_block_q4_0), 1},
    [ST_TYPE_Q4_1] = {"Q4_1", ST_QK4_1, sizeof(st_block_q4_1), 1},
    [ST_TYPE_Q5_0] = {"Q5_0", ST_QK5_0, sizeof(st_block_q5_0), 1},
    [ST_TYPE_Q5_1] = {"Q5_1", ST_QK5_1, sizeof(st_block_q5_1), 1},
    [ST_TYPE_Q8_0] = {"Q8_0", ST_QK8_0, sizeof(st_block_q8_0), 1},
    [ST_TYPE_Q8_1] = {"Q8_1", ST_QK8_1, sizeof(st_block_q8_1), 1},
    [ST_TYPE_Q2_K] = {"Q2_K", ST_QK_K, sizeof(st_block_q2_K), 1},
    [ST_TYPE_Q3_K] = {"Q3_K", ST_QK_K, sizeof(st_block_q3_K), 1},
    [ST_TYPE_Q4_K] = {"Q4_K", ST_QK_K, sizeof(st_block_q4_K), 1},
    [ST_TYPE_Q5_K] = {"Q5_K", ST_QK_K, sizeof(st_block_q5_K), 1},
    [ST_TYPE_Q6_K] = {"Q6_K", ST_QK_K, sizeof(st_block_q6_K), 1},
    [ST_TYPE_Q8_K] = {"Q8_K", ST_QK_K, sizeof(st_block_q8_K), 1},
    [ST_TYPE_IQ4_NL] = {"IQ4_NL", ST_QK4_NL, sizeof(st_block_iq4_nl), 1},
    [ST_TYPE_IQ4_XS] = {"IQ4_XS", ST_QK_K, sizeof(st_block_iq4_xs), 1},
    [ST_TYPE_MXFP4] = {"MXFP4", ST_QK_MXFP4, sizeof(st_block_mxfp4), 1},
};

const st_type_info *st_type_get(uint32_t type) {
    if (type >= ST_TYPE_COUNT || g_types[type].name == NULL) return NULL;
    return &g_types[type];
}

const char *st_type_name(uint32_t type) {
    const st_type_info *t = st_type_get(type);
    return t ? t->name : "?";
}

int st_type_from_name(const char *name) {
    if (name == NULL) return -1;
    for (uint32_t i = 0; i < ST_TYPE_COUNT; i++) {
        const char *n = g_types[i].name;
        if (n == NULL) continue;
        size_t k = 0;
        while (n[k] != '\0' && name[k] != '\0' &&
               toupper((unsigned char)name[k]) == toupper((unsigned char)n[k]))
            k++;
        if (n[k] == '\0' && name[k] == '\0') return (int)i;
    }
    return -1;
}

size_t st_row_size(uint32_t type, int64_t n) {
    const st_type_info *t = st_type_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0) return 0;
    return (size_t)(n / t->block_size) * (size_t)t->type_size;
}
