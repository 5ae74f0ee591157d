// kvref dumps llama.cpp's logits for prompts run with a chosen K/V cache
// type, the reference the Go engine's quantized KV caches are checked
// against (internal/engine/model TestQuantizedCacheReference).
//
// Settings are those of the synthref/1 references (testdata/
// synthetic/README.md): CPU, 1 thread, n_ctx = n_batch = n_ubatch = 256,
// one sequence, empty cache per prompt, the whole prompt decoded as one
// batch with logits for every position, then 24 greedy steps of one token
// (lowest id wins a tie, no stop at end of generation). Unlike them flash
// attention is on: llama.cpp needs it for a quantized V cache.
//
// Output: one JSON object on stdout with, per prompt, the fields of a
// synthref/1 prompt (ids, prompt_logits, generated, top1_top2_gap,
// step_logits for steps 0..3). Floats print with %.9g, which round-trips
// float32.
//
// usage: kvref -m FILE -ctk TYPE -ctv TYPE [-fa on|off] -p IDS [-p IDS]...
//   TYPE: f32, f16, q8_0 or q4_0; IDS: comma-separated token ids.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef LLAMA_LIB_DIR
#error "build with -DLLAMA_LIB_DIR=\"...\" (bench/build.sh does)"
#endif

enum { N_CTX = 256, STEPS = 24, STEP_LOGITS = 4, MAX_PROMPTS = 8 };

static void die(const char *what) {
    fprintf(stderr, "kvref: %s\n", what);
    exit(1);
}

static void quiet_log(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static enum ggml_type parse_type(const char *s) {
    if (!strcmp(s, "f32")) return GGML_TYPE_F32;
    if (!strcmp(s, "f16")) return GGML_TYPE_F16;
    if (!strcmp(s, "q8_0")) return GGML_TYPE_Q8_0;
    if (!strcmp(s, "q4_0")) return GGML_TYPE_Q4_0;
    die("cache type must be f32, f16, q8_0 or q4_0");
    return GGML_TYPE_F32;
}

static int parse_ids(const char *s, llama_token *out, int max) {
    int n = 0;
    while (*s) {
        if (n == max) die("prompt too long");
        char *end;
        out[n++] = (llama_token)strtol(s, &end, 10);
        if (end == s) die("bad token id list");
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void print_row(const float *x, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) {
        printf("%s%.9g", i ? "," : "", x[i]);
    }
    putchar(']');
}

// top2 returns the argmax of x (lowest id on a tie) and its gap to the
// runner-up.
static int top2(const float *x, int n, double *gap) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) best = i;
    }
    float second = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (i != best && x[i] > second) second = x[i];
    }
    *gap = (double)x[best] - (double)second;
    return best;
}

int main(int argc, char **argv) {
    const char *path = NULL, *ctk = NULL, *ctv = NULL, *prompts[MAX_PROMPTS];
    int np = 0;
    bool fa = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) path = argv[i + 1];
        else if (!strcmp(argv[i], "-ctk")) ctk = argv[i + 1];
        else if (!strcmp(argv[i], "-ctv")) ctv = argv[i + 1];
        else if (!strcmp(argv[i], "-fa")) fa = strcmp(argv[i + 1], "off") != 0;
        else if (!strcmp(argv[i], "-p") && np < MAX_PROMPTS) prompts[np++] = argv[i + 1];
        else die("usage: kvref -m FILE -ctk TYPE -ctv TYPE -p IDS [-p IDS]...");
    }
    if (!path || !ctk || !ctv || np == 0 || argc % 2 == 0) {
        die("usage: kvref -m FILE -ctk TYPE -ctv TYPE -p IDS [-p IDS]...");
    }
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(LLAMA_LIB_DIR);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) die("could not load the model");
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = N_CTX;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = parse_type(ctk);
    cp.type_v = parse_type(ctv);
    cp.offload_kqv = false;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) die("could not create the context (cache type unsupported?)");
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));

    printf("{\"format\":\"kvref/1\",\"llama_cpp\":\"v0.4.0 (node-llama-cpp 3.21.1, bench/package-lock.json)\",\"system_info\":\"%s\",\"type_k\":\"%s\",\"type_v\":\"%s\","
           "\"flash_attn\":\"%s\",\"n_ctx\":%d,\"n_threads\":1,\"n_vocab\":%d,\"prompts\":[",
           llama_print_system_info(), ctk, ctv, fa ? "enabled" : "disabled", N_CTX, nv);
    for (int pi = 0; pi < np; pi++) {
        llama_token ids[N_CTX];
        int n = parse_ids(prompts[pi], ids, N_CTX - STEPS);
        llama_memory_clear(llama_get_memory(ctx), true);
        struct llama_batch b = llama_batch_init(n, 0, 1);
        for (int i = 0; i < n; i++) {
            b.token[i] = ids[i];
            b.pos[i] = i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = true;
        }
        b.n_tokens = n;
        if (llama_decode(ctx, b) != 0) die("llama_decode failed on the prompt");
        printf("%s{\"name\":\"p%d\",\"ids\":[", pi ? "," : "", n);
        for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
        printf("],\"prompt_logits\":[");
        for (int i = 0; i < n; i++) {
            if (i) putchar(',');
            print_row(llama_get_logits_ith(ctx, i), nv);
        }
        llama_batch_free(b);
        int gen[STEPS];
        double gap[STEPS];
        float *steps = malloc(sizeof(float) * STEP_LOGITS * nv);
        const float *logits = llama_get_logits_ith(ctx, n - 1);
        for (int k = 0; k < STEPS; k++) {
            if (k > 0) {
                llama_token t = gen[k - 1];
                if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) die("llama_decode failed on a step");
                logits = llama_get_logits_ith(ctx, -1);
            }
            if (k < STEP_LOGITS) memcpy(steps + k * nv, logits, sizeof(float) * nv);
            gen[k] = top2(logits, nv, &gap[k]);
        }
        printf("],\"generated\":[");
        for (int k = 0; k < STEPS; k++) printf("%s%d", k ? "," : "", gen[k]);
        printf("],\"top1_top2_gap\":[");
        for (int k = 0; k < STEPS; k++) printf("%s%.9g", k ? "," : "", gap[k]);
        printf("],\"step_logits\":[");
        for (int k = 0; k < STEP_LOGITS; k++) {
            if (k) putchar(',');
            print_row(steps + k * nv, nv);
        }
        printf("]}");
        free(steps);
    }
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
