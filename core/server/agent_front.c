/* SPDX-License-Identifier: Apache-2.0 */
/* The front's Jinja chat template: loading it (file or GGUF), a trial render, and the BOS
 * rule for the rendered prompt. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/agent.h"
#include "server/front.h"
#include "template/chat_jinja.h"

static char *read_file(const char *path, char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    char *s = NULL;
    long n;
    if (!fp) {
        snprintf(err, errlen, "cannot open %s", path);
        return NULL;
    }
    if (fseek(fp, 0, SEEK_END) || (n = ftell(fp)) < 0 || n > (16L << 20) || fseek(fp, 0, SEEK_SET)) {
        snprintf(err, errlen, "%s: not a readable file of at most 16 MiB", path);
        goto fail;
    }
    s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, fp) != (size_t)n) {
        snprintf(err, errlen, "cannot read %s", path);
        free(s);
        s = NULL;
        goto fail;
    }
    s[n] = 0;
fail:
    fclose(fp);
    return s;
}

/* A plain conversation must render: a template that cannot is not used. */
static int trial_render(st_front *f, char *err, size_t errlen) {
    cJSON *req = cJSON_Parse("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"}]}");
    st_chat_jinja_opts o = {f->bos_text, f->eos_text, 1};
    char *p = req ? st_chat_jinja_apply(f->jinja, req, &o, err, errlen) : NULL;
    int ok = p != NULL;
    if (!req) snprintf(err, errlen, "out of memory");
    free(p);
    cJSON_Delete(req);
    return ok ? 0 : -1;
}

int st_front_load_jinja(st_front *f, const char *gguf_jinja) {
    char err[512];
    char *owned = NULL;
    const char *src = gguf_jinja;
    st_chat_token_text(f->tok, st_tokenizer_bos(f->tok), f->bos_text, sizeof f->bos_text);
    st_chat_token_text(f->tok, st_tokenizer_eos(f->tok), f->eos_text, sizeof f->eos_text);
    if (f->cfg.chat_template_file) {
        if (!(owned = read_file(f->cfg.chat_template_file, err, sizeof err))) goto file_fail;
        src = owned;
        snprintf(f->jinja_origin, sizeof f->jinja_origin, "%s", f->cfg.chat_template_file);
        if (!f->cfg.chat_template) { /* the family (stop strings) from the file, not the GGUF */
            int recognized;
            f->tmpl = st_chat_template_detect(src, st_tokenizer_find(f->tok, "<|im_start|>", 12) >= 0, &recognized);
        }
    } else {
        if (f->cfg.chat_template || f->cfg.no_jinja || !gguf_jinja) return 0; /* a built-in family */
        snprintf(f->jinja_origin, sizeof f->jinja_origin, "the GGUF's tokenizer.chat_template");
    }
    f->jinja = st_jinja_parse(src, err, sizeof err);
    f->tool_syntax = st_tool_syntax_of_template(src);
    if (f->jinja && trial_render(f, err, sizeof err)) {
        st_jinja_free(f->jinja);
        f->jinja = NULL;
    }
    free(owned);
    if (f->jinja) return 0;
    if (f->cfg.chat_template_file) goto file_fail;
    fprintf(stderr, "strata serve: WARNING: the GGUF's chat template cannot be used (%s); using the built-in '%s' "
                    "template (give one with --chat-template-file)\n", err, st_chat_template_name(f->tmpl));
    return 0;
file_fail:
    fprintf(stderr, "strata serve: --chat-template-file: %s\n", err);
    return -1;
}

const char *st_front_prompt_text(const st_front *f, const char *prompt) {
    size_t n = strlen(f->bos_text);
    if (f->jinja && n && st_tokenizer_add_bos(f->tok) && !strncmp(prompt, f->bos_text, n)) return prompt + n;
    return prompt;
}

void st_front_store_lp(st_req *r, int32_t i, const st_token_logprobs *lp) {
    if (i >= r->lps_cap) {
        int32_t cap = r->lps_cap ? r->lps_cap * 2 : 64;
        while (cap <= i) cap *= 2;
        st_token_logprobs *p = realloc(r->lps, sizeof *p * (size_t)cap);
        if (!p) return; /* this token goes without: its entry says so (valid = 0) */
        memset(p + r->lps_cap, 0, sizeof *p * (size_t)(cap - r->lps_cap));
        r->lps = p;
        r->lps_cap = cap;
    }
    r->lps[i] = *lp;
}
