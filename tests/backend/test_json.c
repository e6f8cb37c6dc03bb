/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON writer: nesting, separators, escaping (quotes, control bytes, invalid UTF-8),
 * numbers, and misuse detection. */
#include <math.h>
#include <stdlib.h>

#include "backend/json_writer.h"
#include "test_util.h"

static char *render(void (*fn)(st_json_writer *), int *rc) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    st_json_writer w;
    st_json_init(&w, f);
    fn(&w);
    *rc = st_json_finish(&w);
    fclose(f);
    return buf;
}

static void doc(st_json_writer *w) {
    st_json_begin_object(w);
    st_json_key(w, "s");
    st_json_string(w, "a\"b\\c\n\t\x01 caf\xc3\xa9 bad\xff end");
    st_json_key(w, "n");
    st_json_int(w, -42);
    st_json_key(w, "u");
    st_json_uint(w, 18446744073709551615ull);
    st_json_key(w, "d");
    st_json_double(w, 0.25);
    st_json_key(w, "nan");
    st_json_double(w, NAN);
    st_json_key(w, "arr");
    st_json_begin_array(w);
    st_json_bool(w, 1);
    st_json_null(w);
    st_json_begin_object(w);
    st_json_end_object(w);
    st_json_begin_array(w);
    st_json_end_array(w);
    st_json_string(w, NULL);
    st_json_end_array(w);
    st_json_end_object(w);
}

static void unbalanced(st_json_writer *w) {
    st_json_begin_object(w);
    st_json_key(w, "x");
    st_json_begin_array(w);
}

int main(void) {
    int rc;
    char *out = render(doc, &rc);
    const char *want = "{\n"
                       "  \"s\": \"a\\\"b\\\\c\\n\\t\\u0001 caf\xc3\xa9 bad\\ufffd end\",\n"
                       "  \"n\": -42,\n"
                       "  \"u\": 18446744073709551615,\n"
                       "  \"d\": 0.25,\n"
                       "  \"nan\": null,\n"
                       "  \"arr\": [\n"
                       "    true,\n"
                       "    null,\n"
                       "    {},\n"
                       "    [],\n"
                       "    null\n"
                       "  ]\n"
                       "}\n";
    CHECK(rc == 0);
    CHECK_STR(out, want);
    free(out);
    out = render(unbalanced, &rc);
    CHECK(rc == -1);
    free(out);
    TEST_DONE();
}
