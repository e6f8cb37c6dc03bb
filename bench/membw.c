/* SPDX-License-Identifier: Apache-2.0 */
/* membw: read bandwidth of host memory with T threads (the floor of CPU decode is bytes per
 * token over this number). Usage: membw [threads] [MiB]. Prints the best of 5 passes in GB/s. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} part;

static void *reader(void *arg) {
    part *w = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= w->n; i += 4) {
        s0 += w->p[i];
        s1 += w->p[i + 1];
        s2 += w->p[i + 2];
        s3 += w->p[i + 3];
    }
    w->sum = s0 ^ s1 ^ s2 ^ s3;
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int th = argc > 1 ? atoi(argv[1]) : 1;
    size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
    if (th < 1 || th > 256 || mib < 64) return 2;
    size_t n = mib * 1048576 / 8;
    uint64_t *buf = malloc(n * 8);
    if (!buf) return 1;
    memset(buf, 1, n * 8);
    pthread_t t[256];
    part w[256];
    double best = 0;
    uint64_t x = 0;
    for (int pass = 0; pass < 5; pass++) {
        double t0 = now();
        for (int i = 0; i < th; i++) {
            w[i].p = buf + n / (size_t)th * (size_t)i;
            w[i].n = n / (size_t)th;
            pthread_create(&t[i], NULL, reader, &w[i]);
        }
        for (int i = 0; i < th; i++) {
            pthread_join(t[i], NULL);
            x ^= w[i].sum;
        }
        double gbs = (double)n * 8 / (now() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    printf("{\"threads\":%d,\"mib\":%zu,\"read_gb_s\":%.2f,\"check\":%llu}\n", th, mib, best, (unsigned long long)(x & 1));
    free(buf);
    return 0;
}
