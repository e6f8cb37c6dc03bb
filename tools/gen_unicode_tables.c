/* SPDX-License-Identifier: Apache-2.0 */
/* gen_unicode_tables: writes core/tokenizer/unicode_tables.c from the Unicode Character
 * Database, so the build never needs the UCD itself.
 *
 *   cc -O2 -o gen_unicode_tables tools/gen_unicode_tables.c
 *   ./gen_unicode_tables /usr/share/unicode/UnicodeData.txt /usr/share/unicode/PropList.txt \
 *       "15.1.0" tools/unicode-15.1-additions.txt > core/tokenizer/unicode_tables.c
 *
 * Extra files after VERSION use the UnicodeData.txt format and are applied on top of the
 * first one: tools/unicode-15.1-additions.txt lists the 627 code points Unicode 15.1 assigned
 * (CJK Extension I and five ideographic description characters), which lifts the Unicode
 * 15.0 data that Debian/Ubuntu ship to 15.1, the version the reference tokenizers use.
 *
 * Output: one table of ranges (first code point, general-category class) covering
 * 0..0x10FFFF, where each range lasts until the next one starts, and the list of code points
 * with the White_Space property. Classes are the major categories the pre-tokenizers need
 * (\p{L}, \p{N}, \p{M}, \p{P}, \p{S}, \p{Z}, \p{C}); unassigned code points (Cn) get their
 * own class. Ranges given in UnicodeData.txt as "<..., First>" / "<..., Last>" pairs are
 * expanded. Exit status 0 on success, 1 with a message on stderr otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CP 0x110000u

/* Must match the ST_UCAT_* values of core/tokenizer/unicode.h. */
enum {
    CAT_UNDEF = 0x01,
    CAT_NUMBER = 0x02,
    CAT_LETTER = 0x04,
    CAT_SEPARATOR = 0x08,
    CAT_MARK = 0x10,
    CAT_PUNCT = 0x20,
    CAT_SYMBOL = 0x40,
    CAT_CONTROL = 0x80,
};

static const char *cat_name(int c) {
    switch (c) {
    case CAT_UNDEF: return "ST_UCAT_UNDEF";
    case CAT_NUMBER: return "ST_UCAT_NUMBER";
    case CAT_LETTER: return "ST_UCAT_LETTER";
    case CAT_SEPARATOR: return "ST_UCAT_SEPARATOR";
    case CAT_MARK: return "ST_UCAT_MARK";
    case CAT_PUNCT: return "ST_UCAT_PUNCT";
    case CAT_SYMBOL: return "ST_UCAT_SYMBOL";
    case CAT_CONTROL: return "ST_UCAT_CONTROL";
    }
    return "?";
}

static int cat_of(const char *gc) {
    switch (gc[0]) {
    case 'L': return CAT_LETTER;
    case 'N': return CAT_NUMBER;
    case 'M': return CAT_MARK;
    case 'P': return CAT_PUNCT;
    case 'S': return CAT_SYMBOL;
    case 'Z': return CAT_SEPARATOR;
    case 'C': return gc[1] == 'n' ? CAT_UNDEF : CAT_CONTROL;
    }
    return -1;
}

/* Splits a ';'-separated line in place; returns the number of fields (at most max). */
static int split_fields(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *s = strchr(p, ';');
        if (!s) break;
        *s = 0;
        p = s + 1;
    }
    return n;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* Reads one file in UnicodeData.txt format into cat[]; 0 on success. */
static int read_data(const char *path, uint8_t *cat) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    char line[1024];
    long first = -1; /* start of a <..., First> range */
    unsigned lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *fld[16];
        if (split_fields(line, fld, 16) < 3) continue;
        char *end;
        unsigned long cp = strtoul(fld[0], &end, 16);
        int c = cat_of(fld[2]);
        if (end == fld[0] || cp >= MAX_CP || c < 0) {
            fprintf(stderr, "%s:%u: bad line\n", path, lineno);
            fclose(f);
            return 1;
        }
        const char *name = fld[1];
        size_t nl = strlen(name);
        if (nl > 8 && strcmp(name + nl - 8, ", First>") == 0) {
            first = (long)cp;
            continue;
        }
        if (nl > 7 && strcmp(name + nl - 7, ", Last>") == 0) {
            if (first < 0) {
                fprintf(stderr, "%s:%u: Last without First\n", path, lineno);
                fclose(f);
                return 1;
            }
            for (unsigned long x = (unsigned long)first; x < cp; x++) cat[x] = (uint8_t)c;
            first = -1;
        }
        cat[cp] = (uint8_t)c;
    }
    fclose(f);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s UnicodeData.txt PropList.txt VERSION [EXTRA_DATA.txt...]"
                        " > unicode_tables.c\n", argv[0]);
        return 1;
    }
    uint8_t *cat = malloc(MAX_CP);
    uint8_t *space = calloc(MAX_CP, 1);
    if (!cat || !space) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    memset(cat, CAT_UNDEF, MAX_CP);

    if (read_data(argv[1], cat) != 0) return 1;
    for (int a = 4; a < argc; a++)
        if (read_data(argv[a], cat) != 0) return 1;

    char line[1024];
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    unsigned n_space = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *fld[4];
        if (split_fields(line, fld, 4) < 2) continue;
        if (strcmp(trim(fld[1]), "White_Space") != 0) continue;
        char *range = trim(fld[0]);
        char *dots = strstr(range, "..");
        unsigned long lo = strtoul(range, NULL, 16);
        unsigned long hi = dots ? strtoul(dots + 2, NULL, 16) : lo;
        if (hi >= MAX_CP || lo > hi) {
            fprintf(stderr, "%s: bad White_Space range\n", argv[2]);
            return 1;
        }
        for (unsigned long x = lo; x <= hi; x++) {
            space[x] = 1;
            n_space++;
        }
    }
    fclose(f);
    if (n_space == 0) {
        fprintf(stderr, "%s: no White_Space entries\n", argv[2]);
        return 1;
    }

    printf("/* Generated by tools/gen_unicode_tables.c from UnicodeData.txt and PropList.txt of\n"
           " * Unicode %s. Do not edit; regenerate instead. */\n", argv[3]);
    printf("#include \"tokenizer/unicode.h\"\n\n");
    printf("const char st_unicode_version[] = \"%s\";\n\n", argv[3]);
    printf("/* Ranges of equal category: each lasts until the next one starts. */\n");
    printf("const st_ucat_range st_ucat_ranges[] = {");
    unsigned n_ranges = 0;
    for (uint32_t cp = 0; cp < MAX_CP; cp++) {
        if (cp == 0 || cat[cp] != cat[cp - 1]) {
            printf("%s{0x%06X, %s},", n_ranges % 3 == 0 ? "\n    " : " ", cp, cat_name(cat[cp]));
            n_ranges++;
        }
    }
    printf("\n};\n");
    printf("const uint32_t st_ucat_n_ranges = %u;\n\n", n_ranges);
    printf("/* Code points with the White_Space property, ascending. */\n");
    printf("const uint32_t st_uspace[] = {");
    unsigned k = 0;
    for (uint32_t cp = 0; cp < MAX_CP; cp++) {
        if (!space[cp]) continue;
        printf("%s0x%04X,", k % 8 == 0 ? "\n    " : " ", cp);
        k++;
    }
    printf("\n};\n");
    printf("const uint32_t st_uspace_n = %u;\n", k);
    free(cat);
    free(space);
    return 0;
}
