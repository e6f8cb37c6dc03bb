/* SPDX-License-Identifier: Apache-2.0 */
/* The utility endpoints of llama-server (/apply-template, /tokenize, /detokenize, /props,
 * /slots),
 * answered by the front (server/agent_routes.c). */
#ifndef STRATA_SERVER_AGENT_ROUTES_H
#define STRATA_SERVER_AGENT_ROUTES_H

#include <microhttpd.h>

#include "server/front.h"

/* Nonzero for the urls st_agent_route answers. */
int st_agent_is_route(const char *url);
/* 1 when url is one of these routes (the answer is queued and *res set), else 0. The API key
 * was checked on the headers (server/http.c); the route checks the method. */
int st_agent_route(st_front *f, struct MHD_Connection *c, const char *url, const char *method, const char *body,
                   size_t n, enum MHD_Result *res);

/* GET /slots: each slot's request and progress (server/agent_slots.c). */
enum MHD_Result st_agent_slots(st_front *f, struct MHD_Connection *c);

/* CORS (--cors ORIGINS: "*" or a comma-separated list; NULL = off): set once at start. */
void st_agent_cors_set(const char *origins);
/* Access-Control-Allow-Origin (and Vary) on a response when the request's Origin is allowed. */
void st_agent_cors_headers(struct MHD_Connection *c, struct MHD_Response *r);
/* An OPTIONS preflight: answered (204 with the allowed methods and headers) and 1, else 0. */
int st_agent_preflight(struct MHD_Connection *c, const char *method, enum MHD_Result *res);

#endif
