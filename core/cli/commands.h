/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommands of the strata executable. Each is implemented in core/cli/cmd_<name>.c and
 * returns the process exit status; argv[0] is the subcommand's name. Declared weak so a
 * build that lacks one still links and says the command is not part of this build. */
#ifndef STRATA_CLI_COMMANDS_H
#define STRATA_CLI_COMMANDS_H

#define ST_CMD(fn) int fn(int argc, char **argv) __attribute__((weak))
ST_CMD(st_cmd_backends);
ST_CMD(st_cmd_conformance);
ST_CMD(st_cmd_gguf);
ST_CMD(st_cmd_gen_model);
ST_CMD(st_cmd_run);
ST_CMD(st_cmd_tokenize);
ST_CMD(st_cmd_logits);
ST_CMD(st_cmd_bench);
ST_CMD(st_cmd_serve);
ST_CMD(st_cmd_profile_experts);
ST_CMD(st_cmd_engine);
ST_CMD(st_cmd_plan);
ST_CMD(st_cmd_version);
#undef ST_CMD

#endif
