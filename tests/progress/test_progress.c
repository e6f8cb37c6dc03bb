// SPDX-License-Identifier: Apache-2.0
/* The load progress line (core/progress): its text (percent, sizes, MB/s, ETA in s/m/h, the
 * "--" before a rate exists, truncation) and when it is drawn: off a terminal only when asked,
 * one line per second; on a terminal redrawn in place with \r, a shorter line blanking the
 * rest of a longer one, after 0.5 s unless asked; never with NEVER. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "progress/progress.h"

static int g_fail;

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define MS 1000000ull

static void expect(const char *got, const char *want) { CHECK(!strcmp(got, want), "\n got '%s'\nwant '%s'", got, want); }

static void test_format(void) {
    char b[256];
    st_progress_format(b, sizeof b, "m.gguf", 512 * MIB, 2 * GIB, 1.0);
    expect(b, "loading m.gguf: 25% (512.0 MiB of 2.00 GiB), 537 MB/s, ETA 3s");
    st_progress_format(b, sizeof b, "m.gguf", 0, 2 * GIB, 0.0);
    expect(b, "loading m.gguf: 0% (0.0 MiB of 2.00 GiB), -- MB/s, ETA --");
    st_progress_format(b, sizeof b, "m.gguf", MIB, GIB, 1.0); /* 1023 s left */
    expect(b, "loading m.gguf: 0% (1.0 MiB of 1.00 GiB), 1 MB/s, ETA 17m03s");
    st_progress_format(b, sizeof b, "big.gguf", 10 * MIB, 100 * GIB, 1.0); /* 10230 s left */
    expect(b, "loading big.gguf: 0% (10.0 MiB of 100.00 GiB), 10 MB/s, ETA 2h50m");
    st_progress_format(b, sizeof b, "m.gguf", 3 * GIB, 3 * GIB, 2.0);
    expect(b, "loading m.gguf: 100% (3.00 GiB of 3.00 GiB), 1611 MB/s, ETA 0s");
    st_progress_format(b, sizeof b, "m.gguf", 3 * MIB, 0, 1.0);
    expect(b, "loading m.gguf: 3.0 MiB, 3 MB/s");
    size_t n = st_progress_format(b, 10, "m.gguf", MIB, GIB, 1.0);
    CHECK(n == 9 && strlen(b) == 9, "truncated to the buffer: %zu '%s'", n, b);
    st_progress_format_done(b, sizeof b, "m.gguf", 2 * GIB, 4.0);
    expect(b, "loaded m.gguf: 2.00 GiB in 4.0 s (537 MB/s)");
}

/* What a sequence of updates prints, into a memory stream. tty: pretend it is a terminal. */
static char *drive(int mode, int tty, const uint64_t *ms, int n, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    st_progress p;
    st_progress_begin(&p, f, mode, "/models/m.gguf", 100 * MIB, 0);
    if (tty && mode != ST_PROGRESS_NEVER) {
        p.out = f;
        p.tty = 1;
    }
    for (int i = 0; i < n; i++) st_progress_update(&p, (uint64_t)(i + 1) * 10 * MIB, ms[i] * MS);
    st_progress_end(&p, (ms[n - 1] + 10) * MS);
    fclose(f);
    return text;
}

static int count(const char *s, char c) {
    int k = 0;
    for (; *s; s++) k += *s == c;
    return k;
}

static void test_draw(void) {
    const uint64_t ms[] = {100, 300, 600, 900, 1200, 2500};
    size_t len;
    char *t = drive(ST_PROGRESS_AUTO, 0, ms, 6, &len);
    CHECK(len == 0, "auto, not a terminal: nothing (%zu bytes)", len);
    free(t);
    t = drive(ST_PROGRESS_NEVER, 1, ms, 6, &len);
    CHECK(len == 0, "never: nothing (%zu bytes)", len);
    free(t);
    /* asked, not a terminal: at 0.1 s, 1.2 s and 2.5 s (a line a second), then the end */
    t = drive(ST_PROGRESS_ALWAYS, 0, ms, 6, &len);
    CHECK(count(t, '\n') == 4 && !strchr(t, '\r'), "asked off a terminal: 4 lines, no \\r:\n%s", t);
    CHECK(strstr(t, "loading m.gguf: 10% (10.0 MiB of 100.0 MiB)") == t, "the first line, the base name:\n%s", t);
    CHECK(strstr(t, "loaded m.gguf: 60.0 MiB in 2.5 s") != NULL, "the final line:\n%s", t);
    free(t);
    /* auto on a terminal: nothing before 0.5 s, then redrawn in place, one final newline */
    t = drive(ST_PROGRESS_AUTO, 1, ms, 6, &len);
    CHECK(count(t, '\n') == 1 && t[len - 1] == '\n', "terminal: one line, ended once:\n%s", t);
    CHECK(!strstr(t, "10% ") && !strstr(t, "20% ") && strstr(t, "\rloading m.gguf: 30% "),
          "terminal: first drawn at 0.6 s:\n%s", t);
    CHECK(count(t, '\r') >= 4, "terminal: redrawn with \\r (%d)", count(t, '\r'));
    free(t);
    /* a shorter line after a longer one blanks the rest */
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    st_progress p;
    st_progress_begin(&p, f, ST_PROGRESS_ALWAYS, "m.gguf", 0, 0);
    p.tty = 1;
    st_progress_update(&p, 2000 * MIB, 1000 * MS);
    size_t first = p.last_len;
    st_progress_update(&p, 2001 * MIB, 100000 * MS); /* slower rate: a shorter line */
    fclose(f);
    CHECK(p.last_len < first && strstr(text, "ETA 0s  \r") != NULL, "padding after a shorter line: '%s'", text);
    free(text);
    /* asked, but nothing uploaded (weights read in place): no line */
    f = open_memstream(&text, &len);
    st_progress_begin(&p, f, ST_PROGRESS_ALWAYS, "m.gguf", 5 * MIB, 0);
    st_progress_end(&p, 100 * MS);
    fclose(f);
    CHECK(len == 0, "nothing uploaded: nothing printed ('%s')", text);
    free(text);
}

int main(void) {
    test_format();
    test_draw();
    if (g_fail) fprintf(stderr, "%d checks failed\n", g_fail);
    else printf("PASS: progress\n");
    return g_fail ? 1 : 0;
}
