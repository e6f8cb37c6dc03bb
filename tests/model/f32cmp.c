/* f32cmp A.f32 B.f32 TOL: compares two raw float32 files (same length); prints the largest
 * difference relative to the largest |B| and exits 1 when it exceeds TOL (or the files
 * differ in length, are empty or hold a non-finite value). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *load(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *v = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (v && fread(v, 1, (size_t)bytes, f) != (size_t)bytes) {
        free(v);
        v = NULL;
    }
    fclose(f);
    *n = bytes / 4;
    return v;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: f32cmp A.f32 B.f32 TOL\n");
        return 2;
    }
    long na = 0, nb = 0;
    float *a = load(argv[1], &na), *b = load(argv[2], &nb);
    double tol = atof(argv[3]);
    if (!a || !b || na != nb || na == 0) {
        fprintf(stderr, "f32cmp: cannot compare %s (%ld values) with %s (%ld values)\n", argv[1], na, argv[2], nb);
        return 1;
    }
    double md = 0, mb = 0;
    for (long i = 0; i < na; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            fprintf(stderr, "f32cmp: non-finite value at %ld\n", i);
            return 1;
        }
        double d = fabs((double)a[i] - b[i]);
        if (d > md) md = d;
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    double rel = mb > 0 ? md / mb : md;
    printf("%ld values, max |diff| %.3g, relative %.3g (tolerance %.3g)\n", na, md, rel, tol);
    return rel <= tol ? 0 : 1;
}
