/* SPDX-License-Identifier: Apache-2.0 */
/* STRATA_SIM parser. See sim_config.h and docs/backends.md. */
#include "sim/sim_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MEM (1ull << 30)
#define DEFAULT_HANG_MS 60000ull

typedef struct {
    const char *unit;
    double mult;
} unit_def;

static const unit_def k_units[] = {
    {"", 1.0},           {"B", 1.0},
    {"KiB", 1024.0},     {"MiB", 1048576.0},    {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"KB", 1e3},         {"MB", 1e6},           {"GB", 1e9},           {"TB", 1e12},
};

/* A decimal number followed by a unit, ending at `end` (exclusive). */
static int parse_scaled(const char *s, const char *end, double *out) {
    char num[64], unit[16];
    size_t n = 0;
    while (s + n < end && (isdigit((unsigned char)s[n]) || s[n] == '.')) n++;
    if (n == 0 || n >= sizeof num) return -1;
    memcpy(num, s, n);
    num[n] = 0;
    size_t ul = (size_t)(end - s) - n;
    if (ul >= sizeof unit) return -1;
    memcpy(unit, s + n, ul);
    unit[ul] = 0;
    char *e;
    errno = 0;
    double v = strtod(num, &e);
    if (errno || *e || !isfinite(v) || v < 0) return -1;
    for (size_t i = 0; i < sizeof k_units / sizeof k_units[0]; i++)
        if (!strcasecmp(unit, k_units[i].unit)) {
            *out = v * k_units[i].mult;
            return 0;
        }
    return -1;
}

int st_sim_parse_size(const char *s, uint64_t *out) {
    double v;
    if (parse_scaled(s, s + strlen(s), &v) || v >= 18446744073709551615.0) return -1;
    *out = (uint64_t)v;
    if ((double)*out != v) return -1; /* fractional bytes */
    return 0;
}

static int parse_rate(const char *s, double *out) {
    size_t n = strlen(s);
    if (n < 3 || strcmp(s + n - 2, "/s")) return -1;
    return parse_scaled(s, s + n - 2, out);
}

static int parse_count(const char *s, uint64_t *out) {
    if (!*s) return -1;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

/* One key's value applied to one device's settings. Returns 0, or -1 with err set. */
static int apply(st_sim_dev_config *d, const char *key, const char *val, const char *item, char *err, size_t errlen) {
    uint64_t u;
    if (!strcmp(key, "mem")) {
        if (st_sim_parse_size(val, &u) || u == 0) goto bad_size;
        d->mem = u;
    } else if (!strcmp(key, "bw")) {
        double r;
        if (parse_rate(val, &r)) {
            snprintf(err, errlen, "STRATA_SIM: '%s': expected a rate like 25GB/s or 800MiB/s", item);
            return -1;
        }
        d->bw = r;
    } else if (!strcmp(key, "hang_ms")) {
        if (parse_count(val, &u)) goto bad_count;
        d->hang_ms = u;
    } else if (!strcmp(key, "fail_alloc") || !strcmp(key, "fail_op") || !strcmp(key, "fail_copy") ||
               !strcmp(key, "hang_op") || !strcmp(key, "lose_after") || !strcmp(key, "domain") ||
               !strcmp(key, "unusable") || !strcmp(key, "check_ptrs") ||
               !strcmp(key, "async_errors")) {
        if (parse_count(val, &u)) goto bad_count;
        if (!strcmp(key, "fail_alloc")) d->fail_alloc = u;
        else if (!strcmp(key, "fail_op")) d->fail_op = u;
        else if (!strcmp(key, "fail_copy")) d->fail_copy = u;
        else if (!strcmp(key, "hang_op")) d->hang_op = u;
        else if (!strcmp(key, "lose_after")) d->lose_after = u;
        else if (!strcmp(key, "check_ptrs") || !strcmp(key, "async_errors")) {
            if (u > 1) goto bad_count;
            if (!strcmp(key, "check_ptrs")) d->check_ptrs = (uint32_t)u;
            else d->async_errors = (uint32_t)u;
        }
        else if (!strcmp(key, "domain")) {
            if (u > 255) goto bad_count;
            d->domain = (uint32_t)u;
        } else {
            if (u > 1) goto bad_count;
            d->unusable = (uint32_t)u;
        }
    } else {
        snprintf(err, errlen,
                 "STRATA_SIM: unknown key '%s' in '%s' (keys: devices, mem, bw, pinned, fail_alloc, fail_op, "
                 "fail_copy, hang_op, hang_ms, lose_after, domain, unusable, check_ptrs, async_errors; devN.<key> for one device)",
                 key, item);
        return -1;
    }
    return 0;
bad_size:
    snprintf(err, errlen, "STRATA_SIM: '%s': expected a size above 0 like 512MiB or 2GiB", item);
    return -1;
bad_count:
    snprintf(err, errlen, "STRATA_SIM: '%s': expected a whole number%s", item,
             !strcmp(key, "unusable") || !strcmp(key, "check_ptrs") || !strcmp(key, "async_errors") ? " (0 or 1)" : !strcmp(key, "domain") ? " 0..255" : "");
    return -1;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Split the text into items; `fn` sees each "key=value" item. */
typedef int (*item_fn)(void *ctx, char *key, char *val, const char *item, char *err, size_t errlen);

static int for_each_item(const char *text, item_fn fn, void *ctx, char *err, size_t errlen) {
    const char *p = text;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t')) t--;
        char item[256];
        size_t n = (size_t)(t - p);
        if (n >= sizeof item) {
            snprintf(err, errlen, "STRATA_SIM: item too long near '%.40s'", p);
            return -1;
        }
        memcpy(item, p, n);
        item[n] = 0;
        char work[256];
        memcpy(work, item, n + 1);
        char *eq = strchr(work, '=');
        if (!eq || eq == work || !eq[1]) {
            snprintf(err, errlen, "STRATA_SIM: '%s' is not key=value", item);
            return -1;
        }
        *eq = 0;
        if (fn(ctx, work, eq + 1, item, err, errlen)) return -1;
        p = e;
    }
    return 0;
}

typedef struct {
    st_sim_config *cfg;
    st_sim_dev_config global;
    int pass; /* 0: global keys and devices; 1: per-device overrides */
} parse_ctx;

static int per_device_index(const char *key, uint32_t *idx, const char **rest) {
    if (strncmp(key, "dev", 3) || !isdigit((unsigned char)key[3])) return 0;
    char *e;
    unsigned long v = strtoul(key + 3, &e, 10);
    if (*e != '.') return 0;
    *idx = v > 100000 ? 100000 : (uint32_t)v;
    *rest = e + 1;
    return 1;
}

static int item_cb(void *vctx, char *key, char *val, const char *item, char *err, size_t errlen) {
    parse_ctx *c = vctx;
    uint32_t idx;
    const char *rest;
    if (per_device_index(key, &idx, &rest)) {
        if (c->pass == 0) return 0;
        if (idx >= c->cfg->n_devices) {
            snprintf(err, errlen, "STRATA_SIM: '%s': device %u does not exist (devices=%u)", item, idx,
                     c->cfg->n_devices);
            return -1;
        }
        if (!strcmp(rest, "devices") || !strcmp(rest, "pinned")) {
            snprintf(err, errlen, "STRATA_SIM: '%s': '%s' applies to the whole configuration, not one device", item, rest);
            return -1;
        }
        return apply(&c->cfg->dev[idx], rest, val, item, err, errlen);
    }
    if (c->pass == 1) return 0;
    if (!strcmp(key, "devices")) {
        uint64_t n;
        if (parse_count(val, &n) || n < 1 || n > ST_SIM_MAX_DEVICES) {
            snprintf(err, errlen, "STRATA_SIM: '%s': expected a device count 1..%d", item, ST_SIM_MAX_DEVICES);
            return -1;
        }
        c->cfg->n_devices = (uint32_t)n;
        return 0;
    }
    if (!strcmp(key, "pinned")) {
        if (st_sim_parse_size(val, &c->cfg->pinned)) {
            snprintf(err, errlen, "STRATA_SIM: '%s': expected a size like 512MiB (0 = unlimited)", item);
            return -1;
        }
        return 0;
    }
    return apply(&c->global, key, val, item, err, errlen);
}

int st_sim_config_parse(const char *text, st_sim_config *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    if (!text) {
        snprintf(err, errlen, "STRATA_SIM is not set");
        return -1;
    }
    parse_ctx c;
    memset(&c, 0, sizeof c);
    c.cfg = out;
    out->n_devices = 1;
    c.global.mem = DEFAULT_MEM;
    c.global.hang_ms = DEFAULT_HANG_MS;
    c.global.check_ptrs = 1;
    if (for_each_item(text, item_cb, &c, err, errlen)) return -1;
    for (uint32_t i = 0; i < ST_SIM_MAX_DEVICES; i++) out->dev[i] = c.global;
    c.pass = 1;
    if (for_each_item(text, item_cb, &c, err, errlen)) return -1;
    out->hash = fnv1a(text);
    return 0;
}
