/* SPDX-License-Identifier: Apache-2.0 */
/* GET /slots: what each of the engine's slots does now, in llama-server's shape
 * (id, id_task, n_ctx, is_processing, params, next_token), with the prompt's progress
 * (n_prompt_tokens, n_prompt_tokens_processed) and the tokens the slot's cache holds.
 * `?fail_on_no_slot=1` answers 503 when no slot is idle. The figures come from the engine
 * (between two of its steps); the sampling parameters from the front's record of the request. */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent_routes.h"
#include "server/http_internal.h"

/* A request's parameters as llama-server names them (under f->mu; r may be NULL: idle). */
static void add_params(cJSON *o, const st_req *r) {
    st_sampler_params d;
    st_sampler_params_default(&d);
    const st_sampler_params *p = r ? &r->sp : &d;
    cJSON *ps = cJSON_AddObjectToObject(o, "params");
    cJSON_AddNumberToObject(ps, "n_predict", r ? r->max_tokens : -1);
    cJSON_AddNumberToObject(ps, "seed", (double)p->seed);
    cJSON_AddNumberToObject(ps, "temperature", p->temp);
    cJSON_AddNumberToObject(ps, "top_k", p->top_k);
    cJSON_AddNumberToObject(ps, "top_p", p->top_p);
    cJSON_AddNumberToObject(ps, "min_p", p->min_p);
    cJSON_AddNumberToObject(ps, "repeat_penalty", p->repeat_penalty);
    cJSON_AddNumberToObject(ps, "repeat_last_n", p->penalty_last_n);
    cJSON_AddNumberToObject(ps, "presence_penalty", p->presence_penalty);
    cJSON_AddNumberToObject(ps, "frequency_penalty", p->frequency_penalty);
}

/* One slot's object (under f->mu). */
static cJSON *slot_json(st_front *f, int32_t i, const st_engine_slot *s) {
    const st_req *r = s->active ? st_front_find_req(f, s->id) : NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", i);
    cJSON_AddNumberToObject(o, "id_task", s->active ? (double)s->id : -1);
    cJSON_AddNumberToObject(o, "n_ctx", f->ready.n_ctx);
    cJSON_AddBoolToObject(o, "speculative", 0);
    cJSON_AddBoolToObject(o, "is_processing", s->active != 0);
    cJSON_AddNumberToObject(o, "n_prompt_tokens", s->active ? s->n_prompt : 0);
    cJSON_AddNumberToObject(o, "n_prompt_tokens_processed", s->active ? s->n_done : 0);
    cJSON_AddNumberToObject(o, "n_cached_tokens", s->n_cached);
    add_params(o, r);
    cJSON *nt = cJSON_AddObjectToObject(o, "next_token");
    cJSON_AddBoolToObject(nt, "has_next_token", s->active && s->n_gen < s->max_tokens);
    cJSON_AddBoolToObject(nt, "has_new_line", 0);
    cJSON_AddNumberToObject(nt, "n_remain", s->active ? s->max_tokens - s->n_gen : -1);
    cJSON_AddNumberToObject(nt, "n_decoded", s->active ? s->n_gen : 0);
    cJSON_AddStringToObject(nt, "stopping_word", "");
    return o;
}

enum MHD_Result st_agent_slots(st_front *f, struct MHD_Connection *c) {
    st_msg_stats *s = malloc(sizeof *s); /* ~10 KB: not on a server thread's stack */
    if (!s) return st_http_fail(c, 500, "server_error", NULL, NULL, "out of memory");
    if (st_front_stats(f, s, 1000)) {
        free(s);
        return st_http_fail(c, 503, "server_error", "engine_unavailable", NULL,
                            "the engine did not answer (loading, restarting, or inside a long step)");
    }
    cJSON *a = cJSON_CreateArray();
    int idle = 0;
    pthread_mutex_lock(&f->mu);
    for (int32_t i = 0; i < s->n_slots && i < ST_MSG_SLOTS; i++) {
        cJSON_AddItemToArray(a, slot_json(f, i, &s->slot[i]));
        idle += !s->slot[i].active;
    }
    pthread_mutex_unlock(&f->mu);
    free(s);
    const char *fail = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fail_on_no_slot");
    if (fail && strcmp(fail, "0") && strcmp(fail, "false") && !idle) {
        cJSON_Delete(a);
        return st_http_fail(c, 503, "server_error", "unavailable", NULL, "no slot available");
    }
    return st_http_send_json(c, 200, a);
}
