/* SPDX-License-Identifier: Apache-2.0 */
/* Host topology for thread placement: the CPUs this process may run on in the order workers
 * are pinned to them, and NUMA interleaving of the repacked weight copies. Linux only (sysfs,
 * sched_setaffinity, the mbind system call); elsewhere nothing is pinned or placed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, pthread_setaffinity_np */
#endif
#include "cpu/cpu_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>
#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#endif

#if defined(__linux__) /* the pinning order and the node count read Linux's sysfs */
/* An integer read from a sysfs file, or def. */
static int read_int(const char *path, int def) {
    FILE *f = fopen(path, "r");
    if (!f) return def;
    int v = def;
    if (fscanf(f, "%d", &v) != 1) v = def;
    fclose(f);
    return v;
}

/* NUMA node of cpu (the nodeN link in its sysfs folder), 0 when unknown. */
static int cpu_node(int cpu) {
    char p[96];
    for (int n = 0; n < 64; n++) {
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/node%d", cpu, n);
        if (access(p, F_OK) == 0) return n;
    }
    return 0;
}

/* Rank of cpu among its core's hardware threads (0 for the first sibling). */
static int smt_rank(int cpu) {
    char p[96];
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
    return read_int(p, cpu) == cpu ? 0 : 1; /* the list starts with the core's first thread */
}

typedef struct cpu_key {
    int smt, node, cpu;
} cpu_key;

static int key_cmp(const void *a, const void *b) {
    const cpu_key *x = a, *y = b;
    if (x->smt != y->smt) return x->smt - y->smt;
    if (x->node != y->node) return x->node - y->node;
    return x->cpu - y->cpu;
}
#endif

int st_cpu_pin_order(int *cpus, int max) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    cpu_key *k = malloc(sizeof *k * CPU_SETSIZE);
    if (!k) return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) k[n++] = (cpu_key){smt_rank(c), cpu_node(c), c};
    /* one thread per physical core first, node by node; second hardware threads after */
    qsort(k, (size_t)n, sizeof *k, key_cmp);
    if (n > max) n = max;
    for (int i = 0; i < n; i++) cpus[i] = k[i].cpu;
    free(k);
    return n;
#else
    (void)cpus;
    (void)max;
    return 0;
#endif
}

int st_cpu_pin_self(int cpu) {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
#else
    (void)cpu;
    return -1;
#endif
}

int st_cpu_numa_nodes(void) {
    static int n = -1;
    if (n < 0) {
        int c = 0;
        char p[64];
        for (int i = 0; i < 64; i++) {
            snprintf(p, sizeof p, "/sys/devices/system/node/node%d", i);
            c += access(p, F_OK) == 0;
        }
        n = c ? c : 1;
    }
    return n;
}

int st_cpu_numa_interleave(void *addr, size_t len) {
#if defined(__linux__) && defined(SYS_mbind)
    int nodes = st_cpu_numa_nodes();
    if (nodes < 2) return 0;
    unsigned long mask = nodes >= 64 ? ~0ul : (1ul << nodes) - 1;
    const int mpol_interleave = 3; /* MPOL_INTERLEAVE of <linux/mempolicy.h> */
    return syscall(SYS_mbind, addr, len, mpol_interleave, &mask, (unsigned long)(8 * sizeof mask), 0) == 0 ? 1 : -1;
#else
    (void)addr;
    (void)len;
    return 0;
#endif
}
