/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a stream is a terminal. See platform.h. */
#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#endif

#include "platform/platform.h"

int st_is_terminal(FILE *f) { return f && isatty(fileno(f)); }
