/* echo for completions: the prompt starts the text. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"

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
