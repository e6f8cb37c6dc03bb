/* SPDX-License-Identifier: Apache-2.0 */
/* A library the needs-dep test module links against; the test never lets the loader find it. */
int st_test_absent_dep_value(void);
__attribute__((visibility("default"))) int st_test_absent_dep_value(void) { return 7; }
