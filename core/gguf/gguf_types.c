/* SPDX-License-Identifier: Apache-2.0 */
/* Sizes of GGUF tensor types for validation. Types of core/quant (st_type_get) use its
 * st_row_size; the other ids the file format defines are sized from this table, so a file
 * holding a type this build cannot compute with still opens, and its user can say which
 * tensor has which unsupported type. */
#include "gguf/gguf_internal.h"

#include "quant/quant.h"

typedef struct ftype {
    const char *name;
    uint32_t block, bytes;
} ftype;

/* Block sizes and bytes per block fixed by the file format. */
static const ftype OTHER_TYPES[] = {
    [16] = {"IQ2_XXS", 256, 66},  [17] = {"IQ2_XS", 256, 74}, [18] = {"IQ3_XXS", 256, 98},
    [19] = {"IQ1_S", 256, 50},    [21] = {"IQ3_S", 256, 110}, [22] = {"IQ2_S", 256, 82},
    [27] = {"I64", 1, 8},         [28] = {"F64", 1, 8},       [29] = {"IQ1_M", 256, 56},
    [34] = {"TQ1_0", 256, 54},    [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
};
#define N_OTHER (sizeof OTHER_TYPES / sizeof OTHER_TYPES[0])

const char *st_gguf_tensor_type_name(uint32_t type)
{
    const st_type_info *ti = st_type_get(type);
    if (ti)
        return ti->name;
    if (type < N_OTHER && OTHER_TYPES[type].name)
        return OTHER_TYPES[type].name;
    return "?";
}

int st_gguf_type_block(uint32_t type, uint32_t *block, uint32_t *bytes)
{
    const st_type_info *ti = st_type_get(type);
    if (ti) {
        *block = (uint32_t)ti->block_size;
        *bytes = (uint32_t)st_row_size(type, ti->block_size);
        return *bytes ? 0 : -1;
    }
    if (type < N_OTHER && OTHER_TYPES[type].name) {
        *block = OTHER_TYPES[type].block;
        *bytes = OTHER_TYPES[type].bytes;
        return 0;
    }
    return -1;
}
