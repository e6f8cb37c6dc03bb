/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a stream is a terminal. See platform.h. */
#include <unistd.h>

#include "platform/platform.h"

int st_is_terminal(FILE *f) { return f && isatty(fileno(f)); }
