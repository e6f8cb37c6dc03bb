/* SPDX-License-Identifier: Apache-2.0 */
/* The spellings of llama.cpp's tools (llama-server, llama-cli, llama-bench) that Strata
 * accepts, in one table shared by every command, and the closest known option for a typo. */
#ifndef STRATA_CLI_ALIAS_H
#define STRATA_CLI_ALIAS_H

typedef struct st_cli_alias {
    const char *spelling; /* as typed: "-c", "--ctx-size", ... */
    const char *canon;    /* Strata's option name without dashes, or NULL: accepted and ignored */
    int flag;             /* 1: takes no value (flag_value is used); 2: takes an optional on/off/auto */
    const char *flag_value;
    const char *note;     /* printed once when used: how the meaning differs, or why it is ignored */
} st_cli_alias;

/* The alias entry for an argument, or NULL. */
const st_cli_alias *st_cli_alias_find(const char *arg);
/* The known option closest to arg (edit distance), from known[] (NULL-terminated, with
 * dashes) and the alias spellings; NULL when nothing is close. */
const char *st_cli_closest(const char *arg, const char *const *known);

#endif
