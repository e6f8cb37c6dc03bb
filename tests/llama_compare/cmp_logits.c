/* SPDX-License-Identifier: Apache-2.0 */
/* cmp-logits: compares two [n][n_vocab] float32 logit files (Strata's and the reference's).
 *   cmp-logits A.f32 B.f32 N_VOCAB LIMIT [--greedy FIRST IDS]
 * N_VOCAB 0 treats each file as one row (any float32 arrays of equal length).
 * Prints the largest normalized error over rows, max|a-b| / max|b| per row, and fails (exit 1)
 * when it exceeds LIMIT. With --greedy, row FIRST+j of A must have its argmax at IDS[j]
 * (IDS: comma-separated token ids the reference generated greedily): that is the reference's
 * greedy continuation reproduced token for token. A different choice counts as a near-tie, not
 * a failure, only when the reference's own logits for the two tokens are within LIMIT (the
 * format's stated precision) of each other: at that precision both are the maximum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *load(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *p = malloc((size_t)bytes + 4);
    if (!p || fread(p, 1, (size_t)bytes, f) != (size_t)bytes) {
        fclose(f);
        free(p);
        return NULL;
    }
    fclose(f);
    *n = bytes / 4;
    return p;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: cmp-logits A.f32 B.f32 N_VOCAB LIMIT [--greedy FIRST IDS]\n");
        return 2;
    }
    long na, nb, V = atol(argv[3]);
    double limit = atof(argv[4]);
    float *a = load(argv[1], &na), *b = load(argv[2], &nb);
    if (V == 0) V = na;
    if (!a || !b || na != nb || V <= 0 || na % V) {
        free(a);
        free(b);
        fprintf(stderr, "cmp-logits: files missing or of different sizes (%ld vs %ld floats)\n", na, nb);
        return 2;
    }
    long rows = na / V;
    double worst = 0;
    long worst_row = 0;
    for (long r = 0; r < rows; r++) {
        double m = 0, d = 0;
        for (long v = 0; v < V; v++) {
            double x = a[r * V + v], y = b[r * V + v];
            if (!isfinite(x)) d = INFINITY;
            if (fabs(y) > m) m = fabs(y);
            if (fabs(x - y) > d) d = fabs(x - y);
        }
        double e = m > 0 ? d / m : d;
        if (e > worst) {
            worst = e;
            worst_row = r;
        }
    }
    int ok = worst <= limit;
    printf("rows %ld: max normalized error %.3e (row %ld), limit %.1e: %s\n", rows, worst, worst_row, limit,
           ok ? "ok" : "FAIL");
    if (argc >= 8 && !strcmp(argv[5], "--greedy")) {
        long first = atol(argv[6]);
        const char *s = argv[7];
        int j = 0, mism = 0, ties = 0;
        while (*s) {
            long id = strtol(s, (char **)&s, 10);
            long r = first + j;
            if (r >= rows) break;
            long best = 0;
            for (long v = 1; v < V; v++)
                if (a[r * V + v] > a[r * V + best]) best = v;
            if (best != id && id >= 0 && id < V) {
                double m = 0;
                for (long v = 0; v < V; v++)
                    if (fabs(b[r * V + v]) > m) m = fabs(b[r * V + v]);
                double gap = (double)b[r * V + id] - b[r * V + best];
                if (gap <= limit * m) {
                    printf("greedy: token %d is a near-tie: strata %ld, reference %ld, reference gap %.2e of max %.2e\n",
                           j, best, id, gap, m);
                    ties++;
                } else {
                    printf("greedy: token %d differs: strata %ld, reference %ld (reference gap %.2e)\n", j, best, id,
                           gap);
                    mism++;
                }
            }
            j++;
            if (*s == ',') s++;
        }
        printf("greedy: %d tokens, %d identical, %d near-ties, %d different\n", j, j - mism - ties, ties, mism);
        if (mism) ok = 0;
    }
    free(a);
    free(b);
    return ok ? 0 : 1;
}
