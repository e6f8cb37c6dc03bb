/* SPDX-License-Identifier: Apache-2.0 */
#include "server/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int st_msg_send(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb) {
    uint32_t hdr[2] = {type, (uint32_t)(na + nb)};
    if (write_all(fd, hdr, sizeof hdr)) return -1;
    if (na && write_all(fd, a, na)) return -1;
    if (nb && write_all(fd, b, nb)) return -1;
    return 0;
}

int st_msg_recv(int fd, uint32_t *type, void **payload, size_t *len) {
    uint32_t hdr[2];
    *payload = NULL;
    if (read_all(fd, hdr, sizeof hdr)) return -1;
    if (hdr[1] > ST_MSG_MAX) return -1;
    void *p = malloc(hdr[1] ? hdr[1] : 1);
    if (!p) return -1;
    if (hdr[1] && read_all(fd, p, hdr[1])) {
        free(p);
        return -1;
    }
    *type = hdr[0];
    *payload = p;
    *len = hdr[1];
    return 0;
}
