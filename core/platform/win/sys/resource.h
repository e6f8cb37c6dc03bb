/* SPDX-License-Identifier: Apache-2.0 */
/* <sys/resource.h> for Windows builds: getrusage(RUSAGE_SELF) from GetProcessTimes and
 * GetProcessMemoryInfo (user and system time, peak working set as ru_maxrss in KiB). */
#ifndef STRATA_PLATFORM_WIN_SYS_RESOURCE_H
#define STRATA_PLATFORM_WIN_SYS_RESOURCE_H

#include <sys/time.h>

#define RUSAGE_SELF 0

struct rusage {
    struct timeval ru_utime, ru_stime;
    long ru_maxrss;
    long ru_minflt, ru_majflt, ru_nvcsw, ru_nivcsw;
};

int getrusage(int who, struct rusage *ru);

#endif
