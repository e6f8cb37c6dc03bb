/* SPDX-License-Identifier: Apache-2.0 */
/* Path helpers every OS's shim shares. See dl.h. */
#include <string.h>

#include "platform/dl.h"

int st_path_dir(char *buf, char *out, size_t outlen) {
    char *slash = strrchr(buf, '/');
    if (!slash) return -1;
    if (slash == buf) slash[1] = 0; /* a file in "/" */
    else *slash = 0;
    size_t len = strlen(buf);
    if (len >= outlen) return -1;
    memcpy(out, buf, len + 1);
    return 0;
}
