/* SPDX-License-Identifier: Apache-2.0 */
/* n > 1 (one generation per choice, run one after the other on the same connection: each
 * reuses the prompt's KV through the engine's prefix cache; streamed, each choice's chunks
 * carry its index) and echo for completions. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"

int st_agent_peek_n(const char *body, size_t len) {
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *n = o ? cJSON_GetObjectItemCaseSensitive(o, "n") : NULL;
    int r = cJSON_IsNumber(n) && n->valuedouble >= 2 && n->valuedouble <= ST_AGENT_MAX_N && n->valuedouble == (int)n->valuedouble
                ? (int)n->valuedouble
                : 1;
    cJSON_Delete(o);
    return r;
}

char *st_agent_merge_choices(char *const *json, int n) {
    cJSON *base = cJSON_Parse(json[0]);
    cJSON *choices = base ? cJSON_GetObjectItemCaseSensitive(base, "choices") : NULL;
    cJSON *usage = base ? cJSON_GetObjectItemCaseSensitive(base, "usage") : NULL;
    if (!choices) {
        cJSON_Delete(base);
        return NULL;
    }
    double completion = 0;
    for (int i = 0; i < n; i++) {
        cJSON *o = i ? cJSON_Parse(json[i]) : NULL;
        cJSON *src = i ? o : base;
        cJSON *u = cJSON_GetObjectItemCaseSensitive(src, "usage");
        cJSON *ct = u ? cJSON_GetObjectItemCaseSensitive(u, "completion_tokens") : NULL;
        completion += cJSON_IsNumber(ct) ? ct->valuedouble : 0;
        if (i) {
            cJSON *ch = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
            if (ch) {
                cJSON_ReplaceItemInObjectCaseSensitive(ch, "index", cJSON_CreateNumber(i));
                cJSON_AddItemToArray(choices, ch);
            }
        }
        cJSON_Delete(o);
    }
    if (usage) {
        cJSON *pt = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
        cJSON_ReplaceItemInObjectCaseSensitive(usage, "completion_tokens", cJSON_CreateNumber(completion));
        cJSON_ReplaceItemInObjectCaseSensitive(usage, "total_tokens", cJSON_CreateNumber(completion + (pt ? pt->valuedouble : 0)));
    }
    char *s = cJSON_PrintUnformatted(base);
    cJSON_Delete(base);
    return s;
}

char *st_agent_chunk_index(char *json, int index) {
    cJSON *o = json ? cJSON_Parse(json) : NULL, *c;
    cJSON *choices = o ? cJSON_GetObjectItemCaseSensitive(o, "choices") : NULL;
    if (!cJSON_GetArraySize(choices)) {
        cJSON_Delete(o);
        return json;
    }
    cJSON_ArrayForEach(c, choices) cJSON_ReplaceItemInObjectCaseSensitive(c, "index", cJSON_CreateNumber(index));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return json;
    free(json);
    return s;
}

char *st_agent_echo(char *json, const char *prompt) {
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    cJSON *ch = o ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0) : NULL;
    cJSON *text = ch ? cJSON_GetObjectItemCaseSensitive(ch, "text") : NULL;
    if (!cJSON_IsString(text)) {
        cJSON_Delete(o);
        return json;
    }
    size_t a = strlen(prompt), b = strlen(text->valuestring);
    char *t = malloc(a + b + 1);
    if (t) {
        memcpy(t, prompt, a);
        memcpy(t + a, text->valuestring, b + 1);
        cJSON_ReplaceItemInObjectCaseSensitive(ch, "text", cJSON_CreateString(t));
        free(t);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return json;
    free(json);
    return s;
}
