/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the HTTP connection layer (http.c) and the generation endpoints (http_gen.c). */
#ifndef STRATA_HTTP_INTERNAL_H
#define STRATA_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/front.h"
#include "server/openai.h"

typedef struct gen gen;
typedef struct embed_job embed_job;

/* Per request on a connection (libmicrohttpd's con_cls). */
typedef struct conn_state {
    int route;
    int http10;        /* the request is HTTP/1.0 */
    char *body;        /* the request body so far (counted in the server's buffered bytes) */
    size_t n, cap;
    int too_big;       /* the body passed --max-body: the rest is read and dropped */
    int over_cap;      /* the server's buffered bytes passed --max-buffered: likewise */
    gen *g;            /* a generation that waits for its answer (owned until a stream takes it) */
    int responses;     /* /v1/responses: the body was translated to a chat request (server/agent_responses.c) */
    int n_choices, choice; /* n > 1: the choices run one after the other on this connection */
    char *choices_body;    /* the request body again for each choice (not counted in the buffered bytes) */
    size_t choices_n;
    char *choice_json[16]; /* the finished choices' answers */
    char url[24];      /* the utility routes of server/agent_routes.c */
    int fd;            /* a generation's own copy of the client socket (-1 if none): see st_http_detach */
    embed_job *embed;  /* /v1/embeddings: the inputs in the engine (server/agent_embed.c) */
} conn_state;

/* Answers (the header pair may be NULL). */
enum MHD_Result st_http_send(struct MHD_Connection *c, int status, const char *type, const char *body,
                             const char *hname, const char *hval);
enum MHD_Result st_http_send_error(struct MHD_Connection *c, const st_oai_error *e);
/* o as the JSON body (o is deleted); a 500 when it cannot be printed. */
typedef struct cJSON cJSON;
enum MHD_Result st_http_send_json(struct MHD_Connection *c, int status, cJSON *o);
enum MHD_Result st_http_fail(struct MHD_Connection *c, int status, const char *type, const char *code,
                             const char *param, const char *msg);
/* "Keep-Alive: timeout=S": when the server closes an idle connection (clients stop reusing it
 * before that). */
void st_http_keep_alive_header(struct MHD_Response *r);
/* Frees the body and gives its bytes back to the server's budget. */
void st_http_body_release(conn_state *cs);

/* A generation request whose body is complete: parses it, submits it, and answers or suspends
 * the connection until the request has news. */
enum MHD_Result st_http_gen_start(st_front *f, struct MHD_Connection *c, conn_state *cs, int chat);
/* The connection of cs->g was resumed: answer, start the stream, or suspend again. */
enum MHD_Result st_http_gen_continue(st_front *f, struct MHD_Connection *c, conn_state *cs);
/* Ends a generation that never answered (its client went away): cancels and frees it. */
void st_http_gen_free(gen *g);
/* The library ended the connection of cs, whose generation has not answered yet, and the
 * client only shut down its sending side: the answer is written on cs->fd by a thread of its
 * own, which owns cs from now on. 0, or -1 when the client is gone (cs stays the caller's). */
int st_http_detach(conn_state *cs);
/* POST /v1/embeddings with its body complete (server/agent_embed.c): submits every input and
 * suspends the connection until all are pooled; _continue answers once they are. */
enum MHD_Result st_agent_embeddings(st_front *f, struct MHD_Connection *c, conn_state *cs);
enum MHD_Result st_agent_embed_continue(st_front *f, struct MHD_Connection *c, conn_state *cs);
/* Cancels what is still running and frees the job. */
void st_agent_embed_free(embed_job *j);
/* Frees a connection's request state (its body, choices, socket copy). */
void st_http_cs_free(conn_state *cs);
/* Waits (up to `ms`) until the answers of detached connections are written; past half of it
 * their writes give up, so none outlives the server. */
void st_http_detached_drain(int ms);

#endif
