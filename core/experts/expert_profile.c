/* SPDX-License-Identifier: Apache-2.0 */
/* Expert profile files: ranking, writing, reading with line-numbered refusals. */
#include "experts/expert_profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void st_expert_profile_free(st_expert_profile *p) {
    if (!p) return;
    free(p->layer);
    free(p->expert);
    free(p->count);
    free(p);
}

static st_expert_profile *alloc_profile(int32_t n_layer, int32_t n_expert, int64_t cap) {
    st_expert_profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_layer = n_layer;
    p->n_expert = n_expert;
    size_t c = (size_t)(cap > 0 ? cap : 1);
    p->layer = malloc(c * sizeof *p->layer);
    p->expert = malloc(c * sizeof *p->expert);
    p->count = malloc(c * sizeof *p->count);
    if (!p->layer || !p->expert || !p->count) {
        st_expert_profile_free(p);
        return NULL;
    }
    return p;
}

typedef struct pc {
    uint64_t count;
    int64_t key;
} pc;

static int by_count(const void *a, const void *b) {
    const pc *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return (x->key > y->key) - (x->key < y->key);
}

st_expert_profile *st_expert_profile_from_counts(int32_t n_layer, int32_t n_expert, const uint64_t *counts,
                                                 char *err, size_t errlen) {
    if (n_layer <= 0 || n_expert <= 0 || !counts) {
        snprintf(err, errlen, "expert profile: %d layers x %d experts", n_layer, n_expert);
        return NULL;
    }
    const int64_t K = (int64_t)n_layer * n_expert;
    pc *v = malloc((size_t)K * sizeof *v);
    st_expert_profile *p = v ? alloc_profile(n_layer, n_expert, K) : NULL;
    if (!p) {
        free(v);
        snprintf(err, errlen, "expert profile: out of host memory");
        return NULL;
    }
    for (int64_t k = 0; k < K; k++) v[k].count = counts[k], v[k].key = k;
    qsort(v, (size_t)K, sizeof *v, by_count);
    for (int64_t k = 0; k < K && v[k].count > 0; k++) {
        p->layer[p->n] = (int32_t)(v[k].key / n_expert);
        p->expert[p->n] = (int32_t)(v[k].key % n_expert);
        p->count[p->n] = v[k].count;
        p->n++;
    }
    free(v);
    return p;
}

int st_expert_profile_write(const st_expert_profile *p, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "expert profile: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "strata-expert-profile 1 %d %d\n", p->n_layer, p->n_expert);
    for (int64_t i = 0; i < p->n; i++)
        fprintf(f, "%d %d %llu\n", p->layer[i], p->expert[i], (unsigned long long)p->count[i]);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        snprintf(err, errlen, "expert profile: writing %s failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

st_expert_profile *st_expert_profile_read(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "expert profile: cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    int version = 0, nl = 0, ne = 0;
    st_expert_profile *p = NULL;
    uint8_t *seen = NULL;
    char line[256];
    if (!fgets(line, sizeof line, f) || sscanf(line, "strata-expert-profile %d %d %d", &version, &nl, &ne) != 3 ||
        version != 1 || nl <= 0 || ne <= 0) {
        snprintf(err, errlen, "expert profile %s: line 1 is not 'strata-expert-profile 1 <layers> <experts>'", path);
        goto fail;
    }
    const int64_t K = (int64_t)nl * ne;
    p = alloc_profile(nl, ne, K);
    seen = calloc((size_t)K, 1);
    if (!p || !seen) {
        snprintf(err, errlen, "expert profile: out of host memory");
        goto fail;
    }
    for (int64_t ln = 2; fgets(line, sizeof line, f); ln++) {
        int l, e;
        unsigned long long c;
        char extra;
        if (line[0] == '\n') continue;
        if (sscanf(line, "%d %d %llu %c", &l, &e, &c, &extra) != 3) {
            snprintf(err, errlen, "expert profile %s: line %lld is not '<layer> <expert> <count>'", path, (long long)ln);
            goto fail;
        }
        if (l < 0 || l >= nl || e < 0 || e >= ne) {
            snprintf(err, errlen, "expert profile %s: line %lld: layer %d / expert %d out of range (%d x %d)", path,
                     (long long)ln, l, e, nl, ne);
            goto fail;
        }
        int64_t k = (int64_t)l * ne + e;
        if (seen[k]) {
            snprintf(err, errlen, "expert profile %s: line %lld: layer %d expert %d listed twice", path, (long long)ln, l, e);
            goto fail;
        }
        if (p->n > 0 && c > p->count[p->n - 1]) {
            snprintf(err, errlen, "expert profile %s: line %lld: counts must not rise (ranked list)", path, (long long)ln);
            goto fail;
        }
        seen[k] = 1;
        p->layer[p->n] = l;
        p->expert[p->n] = e;
        p->count[p->n] = c;
        p->n++;
    }
    free(seen);
    fclose(f);
    return p;
fail:
    free(seen);
    st_expert_profile_free(p);
    fclose(f);
    return NULL;
}

int st_expert_profile_check(const st_expert_profile *p, int32_t n_layer, int32_t n_expert, char *err, size_t errlen) {
    if (p->n_layer != n_layer || p->n_expert != n_expert) {
        snprintf(err, errlen, "expert profile was recorded for %d layers x %d experts, the model has %d x %d",
                 p->n_layer, p->n_expert, n_layer, n_expert);
        return -1;
    }
    return 0;
}

st_expert_profile *st_expert_profile_layers(int32_t n_layer, int32_t n_expert, int32_t first, int32_t last, char *err,
                                            size_t errlen) {
    if (n_layer <= 0 || n_expert <= 0 || first < 0 || last >= n_layer || first > last) {
        snprintf(err, errlen, "expert profile: no layers %d..%d in a model of %d layers", first, last, n_layer);
        return NULL;
    }
    uint64_t *counts = calloc((size_t)n_layer * (size_t)n_expert, sizeof *counts);
    if (!counts) {
        snprintf(err, errlen, "expert profile: out of host memory");
        return NULL;
    }
    /* equal counts rank by layer, then expert: the layers' experts in order */
    for (int64_t i = (int64_t)first * n_expert; i < (int64_t)(last + 1) * n_expert; i++) counts[i] = 1;
    st_expert_profile *p = st_expert_profile_from_counts(n_layer, n_expert, counts, err, errlen);
    free(counts);
    return p;
}
