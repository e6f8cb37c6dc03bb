/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance case groups (internal). Each runs all its cases and counts them in c->res. */
#ifndef STRATA_CONF_OPS_H
#define STRATA_CONF_OPS_H

#include "conformance/conf_util.h"

void st_conf_get_rows(st_conf_ctx *c);
void st_conf_rms_norm(st_conf_ctx *c);
void st_conf_matmul(st_conf_ctx *c);
void st_conf_rope(st_conf_ctx *c);
void st_conf_kv_write(st_conf_ctx *c);
void st_conf_attention(st_conf_ctx *c);
void st_conf_elementwise(st_conf_ctx *c);
void st_conf_router(st_conf_ctx *c);
void st_conf_moe_matmul(st_conf_ctx *c);
void st_conf_moe_combine(st_conf_ctx *c);
void st_conf_topk(st_conf_ctx *c);
void st_conf_attn_prep(st_conf_ctx *c);
void st_conf_moe_fused(st_conf_ctx *c);
/* ABI 1.2: ATTENTION_EX and SWIGLU_OAI (conf_oai.c) */
void st_conf_oai(st_conf_ctx *c);

#endif
