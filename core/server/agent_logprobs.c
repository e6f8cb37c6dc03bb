/* SPDX-License-Identifier: Apache-2.0 */
/* logprobs in responses and stream chunks, as OpenAI's SDKs read them:
 *   chat         choices[0].logprobs = {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}
 *   completions  choices[0].logprobs = {"tokens", "token_logprobs", "top_logprobs": [{piece: lp}], "text_offset"} */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"
#include "server/front.h"

void st_agent_lp_init(st_agent_lp *l, int on, int chat) {
    memset(l, 0, sizeof *l);
    l->on = on;
    l->chat = chat;
}

void st_agent_lp_free(st_agent_lp *l) {
    cJSON_Delete(l->pending);
    l->pending = NULL;
}

static cJSON *piece_of(const st_tokenizer *tok, int32_t id, cJSON **bytes) {
    char buf[256];
    int32_t n = st_tokenizer_token_to_piece(tok, id, buf, sizeof buf - 1, true);
    if (n < 0 || n >= (int32_t)sizeof buf) n = 0;
    buf[n] = 0;
    if (bytes) {
        *bytes = cJSON_CreateArray();
        for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(*bytes, cJSON_CreateNumber((unsigned char)buf[i]));
    }
    return cJSON_CreateString(buf);
}

static cJSON *lp_number(const st_token_logprobs *lp, float v) {
    return lp && lp->valid ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void add_chat(st_agent_lp *l, const st_tokenizer *tok, int32_t token, const st_token_logprobs *lp) {
    if (!l->pending) l->pending = cJSON_CreateArray();
    cJSON *e = cJSON_CreateObject(), *bytes, *tops = cJSON_CreateArray();
    cJSON_AddItemToObject(e, "token", piece_of(tok, token, &bytes));
    cJSON_AddItemToObject(e, "logprob", lp_number(lp, lp ? lp->logprob : 0));
    cJSON_AddItemToObject(e, "bytes", bytes);
    for (int32_t k = 0; lp && lp->valid && k < lp->n_top; k++) {
        cJSON *t = cJSON_CreateObject(), *tb;
        cJSON_AddItemToObject(t, "token", piece_of(tok, lp->top_id[k], &tb));
        cJSON_AddNumberToObject(t, "logprob", lp->top_lp[k]);
        cJSON_AddItemToObject(t, "bytes", tb);
        cJSON_AddItemToArray(tops, t);
    }
    cJSON_AddItemToObject(e, "top_logprobs", tops);
    cJSON_AddItemToArray(l->pending, e);
}

static void add_completion(st_agent_lp *l, const st_tokenizer *tok, int32_t token, const st_token_logprobs *lp) {
    if (!l->pending) {
        l->pending = cJSON_CreateObject();
        cJSON_AddArrayToObject(l->pending, "tokens");
        cJSON_AddArrayToObject(l->pending, "token_logprobs");
        cJSON_AddArrayToObject(l->pending, "top_logprobs");
        cJSON_AddArrayToObject(l->pending, "text_offset");
    }
    cJSON *piece = piece_of(tok, token, NULL);
    size_t len = strlen(piece->valuestring);
    cJSON_AddItemToArray(cJSON_GetObjectItem(l->pending, "tokens"), piece);
    cJSON_AddItemToArray(cJSON_GetObjectItem(l->pending, "token_logprobs"), lp_number(lp, lp ? lp->logprob : 0));
    cJSON *tops = cJSON_CreateObject();
    for (int32_t k = 0; lp && lp->valid && k < lp->n_top; k++) {
        cJSON *p = piece_of(tok, lp->top_id[k], NULL);
        if (!cJSON_GetObjectItemCaseSensitive(tops, p->valuestring)) cJSON_AddNumberToObject(tops, p->valuestring, lp->top_lp[k]);
        cJSON_Delete(p);
    }
    cJSON_AddItemToArray(cJSON_GetObjectItem(l->pending, "top_logprobs"), tops);
    cJSON_AddItemToArray(cJSON_GetObjectItem(l->pending, "text_offset"), cJSON_CreateNumber((double)l->offset));
    l->offset += len;
}

void st_agent_lp_add(st_agent_lp *l, const st_tokenizer *tok, int32_t token, const st_token_logprobs *lp) {
    if (!l->on) return;
    if (l->chat) add_chat(l, tok, token, lp);
    else add_completion(l, tok, token, lp);
}

char *st_agent_lp_inject(st_agent_lp *l, char *json) {
    if (!l->on || !json) return json;
    cJSON *o = cJSON_Parse(json);
    cJSON *ch = o ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0) : NULL;
    if (!ch) { /* a usage chunk has no choice */
        cJSON_Delete(o);
        return json;
    }
    cJSON *v;
    if (l->chat) {
        v = cJSON_CreateObject();
        cJSON_AddItemToObject(v, "content", l->pending ? l->pending : cJSON_CreateArray());
    } else v = l->pending ? l->pending : cJSON_CreateNull();
    l->pending = NULL;
    if (cJSON_HasObjectItem(ch, "logprobs")) cJSON_ReplaceItemInObjectCaseSensitive(ch, "logprobs", v);
    else cJSON_AddItemToObject(ch, "logprobs", v);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return json;
    free(json);
    return s;
}
