/* SPDX-License-Identifier: Apache-2.0 */
/* Tool calls in model output: finding each family's call syntax in generated text and turning
 * it into OpenAI tool_calls, and the split of reasoning from the answer for harmony (gpt-oss)
 * channels. Families recognized by their markers, whatever the template:
 *   Qwen / Hermes   <tool_call>{"name": ..., "arguments": {...}}</tool_call>
 *   Qwen3-Coder     <tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>
 *   GLM-4.5         <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>
 *   Mistral         [TOOL_CALLS][{"name": ..., "arguments": {...}}]  or  [TOOL_CALLS]NAME[ARGS]{...}
 *   DeepSeek V3/3.1 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁sep｜>...<｜tool▁call▁end｜>...
 *   Llama 3.x       {"name": ..., "parameters": {...}} as the whole answer (after <|python_tag|>, ";"-separated)
 *   gpt-oss         <|channel|>commentary to=functions.NAME ...<|message|>{...}<|call|>,
 *                   <|channel|>analysis<|message|>... (reasoning), <|channel|>final<|message|>... */
#ifndef STRATA_SERVER_TOOLS_H
#define STRATA_SERVER_TOOLS_H

#include <stddef.h>

typedef struct st_tool_call {
    char *name;
    char *arguments; /* JSON text of an object (compact), as OpenAI sends it */
} st_tool_call;

typedef struct st_tool_result {
    char *content;   /* the text outside the calls (trimmed), "" when none */
    char *reasoning; /* harmony analysis text, or NULL */
    st_tool_call *calls;
    int n_calls;
} st_tool_result;

/* Parse a complete generation. Returns 0, or -1 when out of memory. A call whose syntax is
 * broken (cut off by max_tokens) stays in content as text. */
int st_tools_parse(const char *text, st_tool_result *out);
void st_tool_result_free(st_tool_result *r);

/* Streaming: how many leading bytes of text are certainly not part of a tool call (text
 * before a call marker, and not a prefix of one), so they may be sent as content now. */
size_t st_tools_safe_prefix(const char *text, size_t n);

/* Nonzero when text uses harmony channels (gpt-oss output). */
int st_tools_is_harmony(const char *text);

#endif
