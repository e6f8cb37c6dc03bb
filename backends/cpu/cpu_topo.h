/* SPDX-License-Identifier: Apache-2.0 */
/* Host topology for thread placement (cpu_topo.c). */
#ifndef STRATA_CPU_TOPO_H
#define STRATA_CPU_TOPO_H

#include <stddef.h>

/* The CPUs this process may run on, in pinning order: one hardware thread of each physical
 * core first (node by node, ascending), then the cores' other threads. Writes at most max
 * CPU numbers to cpus and returns how many (0 when unknown). */
int st_cpu_pin_order(int *cpus, int max);
/* Pins the calling thread to one CPU; 0, or -1 when refused. */
int st_cpu_pin_self(int cpu);
/* NUMA nodes of the host (1 when there is no NUMA information). */
int st_cpu_numa_nodes(void);
/* Asks that the pages of [addr, addr + len) (page-aligned, not yet touched) be spread over
 * every node in turn. 1 = done, 0 = one node (nothing to do), -1 = refused. */
int st_cpu_numa_interleave(void *addr, size_t len);

#endif
