/* SPDX-License-Identifier: Apache-2.0 */
/* Type table: bytes per block and elements per block equal GGUF's, names parse back,
 * row sizes, unknown ids. */
#include <string.h>

#include "quant/quant.h"
#include "st_check.h"

struct known {
    uint32_t type;
    const char *name;
    int32_t block;
    int32_t bytes;
};

static const struct known g_known[] = {
    {ST_TYPE_F32, "F32", 1, 4},        {ST_TYPE_F16, "F16", 1, 2},        {ST_TYPE_BF16, "BF16", 1, 2},
    {ST_TYPE_Q4_0, "Q4_0", 32, 18},    {ST_TYPE_Q4_1, "Q4_1", 32, 20},    {ST_TYPE_Q5_0, "Q5_0", 32, 22},
    {ST_TYPE_Q5_1, "Q5_1", 32, 24},    {ST_TYPE_Q8_0, "Q8_0", 32, 34},    {ST_TYPE_Q8_1, "Q8_1", 32, 36},
    {ST_TYPE_Q2_K, "Q2_K", 256, 84},   {ST_TYPE_Q3_K, "Q3_K", 256, 110},  {ST_TYPE_Q4_K, "Q4_K", 256, 144},
    {ST_TYPE_Q5_K, "Q5_K", 256, 176},  {ST_TYPE_Q6_K, "Q6_K", 256, 210},  {ST_TYPE_Q8_K, "Q8_K", 256, 292},
    {ST_TYPE_IQ4_NL, "IQ4_NL", 32, 18}, {ST_TYPE_IQ4_XS, "IQ4_XS", 256, 136}, {ST_TYPE_MXFP4, "MXFP4", 32, 17},
    {ST_TYPE_I8, "I8", 1, 1},          {ST_TYPE_I16, "I16", 1, 2},        {ST_TYPE_I32, "I32", 1, 4},
};

int main(void) {
    for (size_t i = 0; i < sizeof g_known / sizeof g_known[0]; i++) {
        const struct known *k = &g_known[i];
        const st_type_info *t = st_type_get(k->type);
        ST_CHECK_MSG(t != NULL, "type %u missing", k->type);
        if (t == NULL) continue;
        ST_CHECK_MSG(t->block_size == k->block && t->type_size == k->bytes, "%s: %d/%d", k->name, t->block_size,
                     t->type_size);
        ST_CHECK(strcmp(t->name, k->name) == 0);
        ST_CHECK(strcmp(st_type_name(k->type), k->name) == 0);
        ST_CHECK(st_type_from_name(k->name) == (int)k->type);
        ST_CHECK(t->is_quantized == (k->block > 1));
        ST_CHECK(st_row_size(k->type, 4096) == (size_t)(4096 / k->block) * (size_t)k->bytes);
        if (k->block > 1) ST_CHECK(st_row_size(k->type, k->block + 1) == 0);
    }
    /* lower case and mixed case */
    ST_CHECK(st_type_from_name("q4_k") == ST_TYPE_Q4_K);
    ST_CHECK(st_type_from_name("iq4_xs") == ST_TYPE_IQ4_XS);
    ST_CHECK(st_type_from_name("f16") == ST_TYPE_F16);
    ST_CHECK(st_type_from_name("Bf16") == ST_TYPE_BF16);
    /* prefixes and unknowns */
    ST_CHECK(st_type_from_name("Q4") == -1);
    ST_CHECK(st_type_from_name("Q4_K_M") == -1);
    ST_CHECK(st_type_from_name("") == -1);
    ST_CHECK(st_type_from_name(NULL) == -1);
    ST_CHECK(st_type_get(4) == NULL); /* removed Q4_2 */
    ST_CHECK(st_type_get(ST_TYPE_COUNT) == NULL);
    ST_CHECK(st_type_get(1000000) == NULL);
    ST_CHECK(strcmp(st_type_name(5), "?") == 0);
    ST_CHECK(st_row_size(5, 32) == 0);
    ST_CHECK(st_row_size(ST_TYPE_F32, -1) == 0);
    /* unsupported ids are refused by the row functions */
    float f[32] = {0};
    unsigned char buf[64];
    ST_CHECK(st_dequantize_row(5, buf, f, 32) == -1);
    ST_CHECK(st_quantize_row(5, f, buf, 32) == -1);
    ST_CHECK(st_quantize_row(ST_TYPE_Q4_0, f, buf, 31) == -1);
    ST_CHECK(isnan(st_dot_row_ref(ST_TYPE_Q4_0, buf, f, 31)));
    return st_check_result("test_quant_types");
}
