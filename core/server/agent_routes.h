/* The utility endpoints of llama-server (/apply-template, /tokenize, /detokenize, /props),
 * answered by the front (server/agent_routes.c). */
#ifndef STRATA_SERVER_AGENT_ROUTES_H
#define STRATA_SERVER_AGENT_ROUTES_H

#include <microhttpd.h>

#include "server/front.h"

/* 1 when url is one of these routes (the answer is queued and *res set), else 0. The API key
 * and the method were checked on the headers (server/http.c). */
int st_agent_route(st_front *f, struct MHD_Connection *c, const char *url, const char *method, const char *body,
                   size_t n, enum MHD_Result *res);

#endif
