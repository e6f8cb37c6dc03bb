/* SPDX-License-Identifier: Apache-2.0 */
/* Strata's embedding API: open a GGUF model on a device, tokenize, and generate text with a
 * sampler, tokens streamed through a callback. libstrata.so / libstrata.a, `pkg-config strata`.
 *
 * Rules of the API (docs/library.md says more):
 * - Handles are opaque: strata_model (the file, the device, the weights) and strata_context
 *   (one conversation: its own request, detokenizer and cancel flag).
 * - Every call that can fail returns a strata_status; the text of the last failure on the
 *   calling thread is strata_last_error(). Nothing in the library exits, aborts or prints,
 *   except the plan's table and the load progress line when the options ask for them.
 * - Option and result structs start with `uint32_t size`; fill them with their _init function
 *   (which sets size to the size this header knows). The library reads and writes only the
 *   first `size` bytes, so a program built against an older header keeps working with a newer
 *   library. Fields are only ever added at the end.
 * - Threads: a model may be shared by several threads, each using its own context; generation
 *   on different contexts runs concurrently in the same steps (continuous batching, up to
 *   strata_model_options.n_parallel at once; more wait their turn). One context is used by one
 *   thread at a time, except strata_cancel, which any thread may call at any time.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_API_MAJOR 1 /* changes only with an incompatible change (and the soname with it) */
#define STRATA_API_MINOR 0 /* grows with every addition */

#if defined(_WIN32)
#if defined(STRATA_BUILDING_LIBRARY)
#define STRATA_API __declspec(dllexport)
#elif defined(STRATA_STATIC)
#define STRATA_API
#else
#define STRATA_API __declspec(dllimport)
#endif
#else
#define STRATA_API __attribute__((visibility("default")))
#endif

typedef enum strata_status {
    STRATA_OK = 0,
    STRATA_ERR_INVALID = 1,     /* a bad argument or option (the message names it) */
    STRATA_ERR_IO = 2,          /* a file cannot be read */
    STRATA_ERR_FORMAT = 3,      /* the file is not a model this library can run */
    STRATA_ERR_NO_DEVICE = 4,   /* no usable device, or not the one asked for */
    STRATA_ERR_NO_MEMORY = 5,   /* host or device memory */
    STRATA_ERR_DEVICE = 6,      /* the device failed during a step */
    STRATA_ERR_CONTEXT = 7,     /* the prompt does not fit the context, or the queue is full */
    STRATA_ERR_BUFFER = 8,      /* the caller's buffer is too small; the size needed is returned */
    STRATA_ERR_UNSUPPORTED = 9  /* this build or this model cannot do it */
} strata_status;

typedef struct strata_model strata_model;
typedef struct strata_context strata_context;

/* "1.0": STRATA_API_MAJOR.STRATA_API_MINOR of the library that is loaded (compare with the
 * header's to detect an older library). */
STRATA_API const char *strata_api_version(void);
/* "0.1.0 (commit 1a2b3c4d5e6f)": the Strata release the library comes from. */
STRATA_API const char *strata_version(void);
/* "OK", "INVALID", ...; static storage. */
STRATA_API const char *strata_status_name(strata_status s);
/* Text of the last failure on this thread ("" when none yet); valid until the next call on
 * this thread. */
STRATA_API const char *strata_last_error(void);
/* Frees memory the library returned (strata_chat_prompt's text). NULL is ok. */
STRATA_API void strata_free(void *p);

/* ---- model --------------------------------------------------------------------------------- */

typedef struct strata_model_options {
    uint32_t size;             /* sizeof(strata_model_options), set by _init */
    const char *backend;       /* module to run on: "cpu", "cuda", ... ; NULL = the usable device
                                  with the most memory that is not the CPU, else the CPU */
    int32_t device;            /* that module's device index; -1 = the first (default) */
    int32_t threads;           /* CPU worker threads; 0 = the module's choice */
    int32_t n_ctx;             /* positions per context; 0 = min(training context, 4096) */
    int32_t n_batch;           /* tokens per forward; 0 = 512 */
    int32_t n_parallel;        /* contexts generating at once (KV cache sequences); 0 = 1 */
    const char *kv_type;       /* "f16" (NULL = default), "f32", "q8_0" */
    const char *backend_path;  /* ':'-separated module directories or files searched instead of
                                  $STRATA_BACKEND_PATH and the library's own <libdir>/strata/backends */
    /* the memory plan (as the strata command's flags of the same names) */
    uint64_t vram_budget;      /* --vram-budget, bytes; 0 = none */
    uint64_t vram_reserve;     /* --vram-reserve-mib, in bytes; 0 = none */
    int64_t expert_cache;      /* --expert-cache N slots; -1 = auto (default) */
    int32_t n_cpu_moe;         /* --n-cpu-moe N; -1 = not given (default) */
    const char *expert_profile;/* --expert-profile FILE or NULL */
    int32_t verbose;           /* nonzero: the plan's table and notes on stderr */
    int32_t progress;          /* the weights' upload progress line on stderr: 0 never (default),
                                  1 always, -1 on a terminal for loads that last */
    int32_t no_mmap;           /* nonzero: copy the weights even to a device that can read the
                                  mapped file in place (the CPU), as --no-mmap */
} strata_model_options;

STRATA_API void strata_model_options_init(strata_model_options *o);

/* Opens the GGUF file at `path` (NULL options = the defaults), chooses and opens the device,
 * plans its memory and loads the weights. *out is the model, or NULL on failure. */
STRATA_API strata_status strata_model_open(const char *path, const strata_model_options *o, strata_model **out);
/* Frees the model: every context of it must have been freed. NULL is ok. */
STRATA_API void strata_model_free(strata_model *m);

typedef struct strata_model_info {
    uint32_t size;          /* set by the caller: sizeof(strata_model_info) */
    int32_t n_vocab;
    int32_t n_ctx;          /* positions per context */
    int32_t n_ctx_train;    /* the model's training context */
    int32_t n_parallel;
    int32_t n_layer, n_embd, n_expert, n_expert_used;
    int32_t token_bos, token_eos; /* -1 when the model has none */
    char arch[32];          /* "qwen3moe", "llama", ... */
    char device[160];       /* "cpu device 0: Host CPU (AVX2)" */
    char description[512];  /* one line: family, size, quantization */
    int32_t has_chat_template; /* nonzero: the model names its chat template (strata_chat uses it) */
} strata_model_info;

STRATA_API strata_status strata_model_get_info(const strata_model *m, strata_model_info *out);

/* ---- tokens --------------------------------------------------------------------------------- */

/* Encodes text[0..len) into at most cap ids. add_special: BOS/EOS as the model says;
 * parse_special: control tokens written in the text ("<|im_start|>") become their ids.
 * *n_out is the number of ids of the whole encoding; STRATA_ERR_BUFFER when it exceeds cap
 * (call again with a larger buffer; tokens may be NULL with cap 0 to ask the size). */
STRATA_API strata_status strata_tokenize(const strata_model *m, const char *text, size_t len, int add_special,
                                         int parse_special, int32_t *tokens, size_t cap, size_t *n_out);
/* The text of tokens[0..n) (control tokens give "" unless `special`), NUL-terminated in
 * buf[cap]. *len_out is its length without the NUL; STRATA_ERR_BUFFER when buf is too small. */
STRATA_API strata_status strata_detokenize(const strata_model *m, const int32_t *tokens, size_t n, int special,
                                           char *buf, size_t cap, size_t *len_out);

/* ---- contexts and generation ------------------------------------------------------------------ */

/* A new context of m. The model keeps each context's last tokens in one of its n_parallel
 * sequences, so a prompt that continues the previous one is not computed again. */
STRATA_API strata_status strata_context_new(strata_model *m, strata_context **out);
/* Frees a context no thread is generating on. NULL is ok. */
STRATA_API void strata_context_free(strata_context *c);

/* Called for each generated token: its id and the text it completes (whole UTF-8 characters
 * only: empty while a character spans several tokens). When the generation ends with bytes of
 * an unfinished character held back, one last call with token -1 carries them (as U+FFFD).
 * Return 0 to go on, nonzero to stop (the generation then finishes as STRATA_FINISH_CANCEL).
 * Runs on the thread that called strata_generate, without any lock of the library held. */
typedef int (*strata_token_fn)(void *user, int32_t token, const char *text, size_t len);

typedef struct strata_generate_options {
    uint32_t size;            /* sizeof(strata_generate_options), set by _init */
    int32_t max_tokens;       /* > 0; default 128 */
    float temperature;        /* <= 0: greedy; default 0.8 */
    int32_t top_k;            /* 0 = off; default 40 */
    float top_p;              /* 1 = off; default 0.95 */
    float min_p;              /* 0 = off; default 0.05 */
    float repeat_penalty;     /* 1 = off (default) */
    int32_t repeat_last_n;    /* tokens the penalties look at; default 64; -1 = all */
    float presence_penalty;   /* 0 = off */
    float frequency_penalty;  /* 0 = off */
    uint64_t seed;            /* sampling seed; default 0 (the same seed gives the same text) */
    int32_t ignore_eos;       /* nonzero: the end-of-generation token does not end it */
    strata_token_fn on_token; /* may be NULL */
    void *user;               /* passed to on_token */
} strata_generate_options;

STRATA_API void strata_generate_options_init(strata_generate_options *o);

typedef enum strata_finish {
    STRATA_FINISH_STOP = 0,   /* the model ended its text */
    STRATA_FINISH_LENGTH = 1, /* max_tokens reached, or the context is full */
    STRATA_FINISH_CANCEL = 2, /* strata_cancel, or the callback returned nonzero */
    STRATA_FINISH_ERROR = 3   /* the device failed (the call returns STRATA_ERR_DEVICE) */
} strata_finish;

typedef struct strata_generate_result {
    uint32_t size;            /* set by the caller: sizeof(strata_generate_result) */
    int32_t finish;           /* strata_finish */
    int32_t n_prompt;         /* prompt tokens, of which n_reused were kept from the last request */
    int32_t n_reused;
    int32_t n_generated;
    double prefill_ms;        /* from the start to the first token */
    double decode_ms;         /* from the first token to the end */
} strata_generate_result;

/* Generates after prompt[0..n_prompt) (token ids, BOS included when wanted) and returns when
 * the generation ends; the tokens come through o->on_token. result may be NULL. */
STRATA_API strata_status strata_generate(strata_context *c, const int32_t *prompt, size_t n_prompt,
                                         const strata_generate_options *o, strata_generate_result *result);
/* Tokenizes `prompt` (with BOS as the model says; control tokens written in it are parsed) and
 * generates after it. An empty prompt starts from BOS. */
STRATA_API strata_status strata_generate_text(strata_context *c, const char *prompt, const strata_generate_options *o,
                                              strata_generate_result *result);
/* Stops the generation running on c (at the next step); returns at once. Any thread. */
STRATA_API void strata_cancel(strata_context *c);

/* ---- chat ----------------------------------------------------------------------------------- */

typedef struct strata_chat_message {
    const char *role;    /* "system", "user", "assistant" */
    const char *content; /* UTF-8 */
} strata_chat_message;

/* The prompt text of a conversation in the model's chat template, ending with the assistant's
 * turn opened: the GGUF's Jinja template (tokenizer.chat_template); a built-in template of the
 * family it names when this build has no Jinja engine or the template cannot render; the plain
 * "User: ...\nAssistant:" form when the model names none (strata_model_info.has_chat_template
 * is then 0). *prompt is freed with strata_free. */
STRATA_API strata_status strata_chat_prompt(const strata_model *m, const strata_chat_message *msgs, size_t n,
                                            char **prompt);
/* Renders the conversation and generates the assistant's reply. The messages' contents are
 * tokenized as plain text: control tokens typed in them are not parsed. */
STRATA_API strata_status strata_chat(strata_context *c, const strata_chat_message *msgs, size_t n,
                                     const strata_generate_options *o, strata_generate_result *result);

#ifdef __cplusplus
}
#endif
#endif
