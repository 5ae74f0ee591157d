// synthref writes llama.cpp's reference outputs on a synthetic model in the
// project's `synthref/1` format (testdata/synthetic/README.md): the
// full logits at every position of each prompt decoded as one batch, 24
// greedy steps with their top-1/top-2 gaps, the full logits of steps 0..3,
// and the same runs on an F32 copy of the model that llama.cpp's own
// quantizer dequantized (the `dequant_f32` section). Settings as the README
// records: CPU, 1 thread, n_ctx = n_batch = n_ubatch = 256, flash attention
// off, F32 K/V cache. With -long-ctx N it also writes the `long_context`
// section: the same runs (main and dequant_f32) in a context of N
// positions, which for a LongRoPE model (phi3) past its original context
// takes the long rope factors where n_ctx 256 takes the short ones. With
// -long-prompt N it also writes the `long_prompt` section: one prompt of N
// tokens (BOS, then ids of a fixed generator), decoded in a context of N
// plus the generation rounded up to 256 in ubatches of 512, with the
// logits of its last LONG_LOGITS positions only (first_logit_position
// names the first), its greedy steps and their step logits, on the model
// and its dequantized copy: for llama4, whose chunked attention and
// attention temperature llama.cpp fixes at 8192 positions.
//
// It calls the prebuilt libllama that node-llama-cpp ships, like
// llamabench.c; bench/build.sh builds it. bench/synthref.sh drives it.
//
// usage: synthref -m FILE -sha256 HEX -desc TEXT [-cmd TEXT] [-long-ctx N] [-long-prompt N] [-v]

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "llama.h"

#ifndef LLAMA_LIB_DIR
#error "build with -DLLAMA_LIB_DIR=\"...\" (bench/build.sh does)"
#endif

enum { N_CTX = 256, N_GEN = 24, N_STEP_LOGITS = 4, LONG_LOGITS = 48, LONG_UBATCH = 512 };

static bool verbose;

static void quiet_log(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (verbose || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static void die(const char *what) {
    fprintf(stderr, "synthref: %s\n", what);
    exit(1);
}

// The public prompts of the existing synthetic references: BOS alone, and
// BOS followed by 32 fixed ids below 1024.
static const llama_token P33[] = {1,   76,  512, 661, 982, 546, 164, 910, 643, 958, 782,
                                  644, 605, 428, 797, 416, 777, 539, 593, 264, 860, 342,
                                  236, 128, 802, 184, 3,   613, 855, 132, 587, 844, 490};
static const llama_token P1[] = {1};

struct prompt {
    const char *name;
    const llama_token *ids;
    int n;
    int first_logit; // the first position whose logits are recorded
};

// long_ids fills ids with BOS and then n-1 ids in [3, nv) of a fixed
// linear congruential generator.
static void long_ids(llama_token *ids, int n, int nv) {
    uint32_t x = 33;
    ids[0] = 1;
    for (int i = 1; i < n; i++) {
        x = (x * 1103515245u + 12345u) & 0x7fffffffu;
        ids[i] = 3 + (llama_token)((x >> 8) % (uint32_t)(nv - 3));
    }
}

static void print_floats(const float *x, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) {
        // %.9g round-trips every float32 exactly.
        printf("%s%.9g", i ? "," : "", x[i]);
    }
    putchar(']');
}

// best2 returns the argmax (lowest id among equals) and the runner-up.
static void best2(const float *x, int n, int *b1, int *b2) {
    int a = 0, b = -1;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[a]) {
            b = a;
            a = i;
        } else if (b < 0 || x[i] > x[b]) {
            b = i;
        }
    }
    *b1 = a;
    *b2 = b;
}

static struct llama_context *new_context(struct llama_model *model, int n_ctx, int n_ubatch) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_ctx;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        die("llama_init_from_model failed");
    }
    return ctx;
}

// run_prompt prints one prompt's record.
static void run_prompt(struct llama_context *ctx, int nv, const struct prompt *p) {
    llama_memory_clear(llama_get_memory(ctx), true);
    struct llama_batch b = llama_batch_init(p->n, 0, 1);
    for (int i = 0; i < p->n; i++) {
        b.token[i] = p->ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i >= p->first_logit;
    }
    b.n_tokens = p->n;
    if (llama_decode(ctx, b) != 0) {
        die("llama_decode failed on a prompt");
    }
    llama_batch_free(b);
    printf("{\"name\":\"%s\",\"ids\":[", p->name);
    for (int i = 0; i < p->n; i++) {
        printf("%s%d", i ? "," : "", p->ids[i]);
    }
    if (p->first_logit > 0) {
        printf("],\"first_logit_position\":%d", p->first_logit);
    } else {
        putchar(']');
    }
    printf(",\"prompt_logits\":[");
    for (int i = p->first_logit; i < p->n; i++) {
        if (i > p->first_logit) {
            putchar(',');
        }
        print_floats(llama_get_logits_ith(ctx, i), nv);
    }
    printf("]");
    int gen[N_GEN], runner[N_GEN];
    float chosen[N_GEN], runner_logit[N_GEN];
    float *steps = malloc(sizeof(float) * nv * N_STEP_LOGITS);
    const float *last = llama_get_logits_ith(ctx, p->n - 1);
    for (int k = 0; k < N_GEN; k++) {
        if (k > 0) {
            llama_token t = gen[k - 1];
            struct llama_batch one = llama_batch_init(1, 0, 1);
            one.token[0] = t;
            one.pos[0] = p->n + k - 1;
            one.n_seq_id[0] = 1;
            one.seq_id[0][0] = 0;
            one.logits[0] = 1;
            one.n_tokens = 1;
            if (llama_decode(ctx, one) != 0) {
                die("llama_decode failed on a step");
            }
            llama_batch_free(one);
            last = llama_get_logits_ith(ctx, 0);
        }
        if (k < N_STEP_LOGITS) {
            memcpy(steps + (size_t)k * nv, last, sizeof(float) * nv);
        }
        best2(last, nv, &gen[k], &runner[k]);
        chosen[k] = last[gen[k]];
        runner_logit[k] = last[runner[k]];
    }
    printf(",\"generated\":[");
    for (int k = 0; k < N_GEN; k++) {
        printf("%s%d", k ? "," : "", gen[k]);
    }
    printf("],\"chosen_logit\":");
    print_floats(chosen, N_GEN);
    printf(",\"runner_up\":[");
    for (int k = 0; k < N_GEN; k++) {
        printf("%s%d", k ? "," : "", runner[k]);
    }
    printf("],\"runner_up_logit\":");
    print_floats(runner_logit, N_GEN);
    printf(",\"top1_top2_gap\":[");
    for (int k = 0; k < N_GEN; k++) {
        printf("%s%.9g", k ? "," : "", (double)chosen[k] - (double)runner_logit[k]);
    }
    printf("],\"step_logits\":[");
    for (int k = 0; k < N_STEP_LOGITS; k++) {
        if (k) {
            putchar(',');
        }
        print_floats(steps + (size_t)k * nv, nv);
    }
    printf("]}");
    free(steps);
}

// run_model prints `"prompts":[...]` for the model at path, run in a
// context of n_ctx positions: the public prompts, or with long > 0 the one
// long prompt of that many tokens.
static void run_model(const char *path, int n_ctx, int long_n) {
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        die("llama.cpp could not load the model (run with -v for its log)");
    }
    struct llama_context *ctx = new_context(model, n_ctx, long_n > 0 ? LONG_UBATCH : n_ctx);
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("\"prompts\":[");
    if (long_n > 0) {
        llama_token *ids = malloc(sizeof(llama_token) * (size_t)long_n);
        long_ids(ids, long_n, nv);
        const struct prompt p = {"long", ids, long_n, long_n - LONG_LOGITS};
        run_prompt(ctx, nv, &p);
        free(ids);
    } else {
        const struct prompt ps[] = {{"p1", P1, 1, 0}, {"p33", P33, 33, 0}};
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            if (i) {
                putchar(',');
            }
            run_prompt(ctx, nv, &ps[i]);
        }
    }
    printf("]");
    llama_free(ctx);
    llama_model_free(model);
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            putchar('\\');
        }
        if ((unsigned char)*s >= 0x20) {
            putchar(*s);
        }
    }
    putchar('"');
}

int main(int argc, char **argv) {
    const char *path = NULL, *sha = "", *desc = "", *cmd = "";
    int long_ctx = 0, long_prompt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-m") && has) {
            path = argv[++i];
        } else if (!strcmp(a, "-sha256") && has) {
            sha = argv[++i];
        } else if (!strcmp(a, "-desc") && has) {
            desc = argv[++i];
        } else if (!strcmp(a, "-cmd") && has) {
            cmd = argv[++i];
        } else if (!strcmp(a, "-long-ctx") && has) {
            long_ctx = atoi(argv[++i]);
            if (long_ctx <= N_CTX) {
                die("-long-ctx needs a context longer than 256");
            }
        } else if (!strcmp(a, "-long-prompt") && has) {
            long_prompt = atoi(argv[++i]);
            if (long_prompt <= LONG_LOGITS) {
                die("-long-prompt needs more tokens than the logits it records");
            }
        } else if (!strcmp(a, "-v")) {
            verbose = true;
        } else {
            fprintf(stderr, "usage: synthref -m FILE -sha256 HEX -desc TEXT [-cmd TEXT] [-long-ctx N] [-long-prompt N] [-v]\n");
            return 2;
        }
    }
    if (!path) {
        die("need -m FILE");
    }
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(LLAMA_LIB_DIR);
    llama_backend_init();

    // llama.cpp's own dequantization of every weight, for the dequant_f32
    // section.
    char f32path[4096];
    snprintf(f32path, sizeof f32path, "%s.synthref-f32.%d.gguf", path, (int)getpid());
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.nthread = 1;
    qp.ftype = LLAMA_FTYPE_ALL_F32;
    qp.allow_requantize = true;
    qp.quantize_output_tensor = true;
    qp.pure = true;
    if (llama_model_quantize(path, f32path, &qp) != 0) {
        die("llama_model_quantize to F32 failed");
    }

    printf("{\"format\":\"synthref/1\",\"split\":\"public\",\"model\":{\"file\":");
    const char *base = strrchr(path, '/');
    json_string(base ? base + 1 : path);
    printf(",\"sha256\":");
    json_string(sha);
    printf(",\"description\":");
    json_string(desc);
    printf(",\"command\":");
    json_string(cmd);
    printf("},\"llama_cpp\":{\"version\":");
    json_string(llama_version());
    printf(",\"system_info\":");
    json_string(llama_print_system_info());
    printf("},\"settings\":{\"n_ctx\":%d,\"n_batch\":%d,\"n_ubatch\":%d,\"n_seq_max\":1,\"n_threads\":1,"
           "\"flash_attn\":\"disabled\",\"kv_cache_type\":\"f32\",\"offload\":\"none (CPU only)\","
           "\"generator\":\"bench/synthref.c\"},",
           N_CTX, N_CTX, N_CTX);
    // The bounds of testdata/synthetic/README.md for weights whose
    // activations are rounded to 8 bits (every quantized type).
    printf("\"tolerance\":{\"group\":\"8-bit activations\","
           "\"engine_mimicking_llamacpp_activation_rounding\":{\"max_abs_logit_diff\":1.5,\"rms_logit_diff\":0.2,"
           "\"top1_must_agree_where_gap_at_least\":0.5},"
           "\"engine_f32_activations\":{\"max_abs_logit_diff\":5,\"rms_logit_diff\":0.75,"
           "\"top1_must_agree_where_gap_at_least\":2},"
           "\"engine_f32_activations_vs_dequant_f32_section\":{\"max_abs_logit_diff\":0.00075,\"rms_logit_diff\":5e-05,"
           "\"top1_must_agree_where_gap_at_least\":0.001},"
           "\"see\":\"shared/reference/synthetic/README.md (Tolerances)\"},");
    run_model(path, N_CTX, 0);
    printf(",\"dequant_f32\":{\"note\":\"llama_model_quantize(ALL_F32, pure, allow_requantize) of the model\",");
    run_model(f32path, N_CTX, 0);
    printf("}");
    if (long_ctx > 0) {
        printf(",\"long_context\":{\"n_ctx\":%d,\"n_batch\":%d,\"n_ubatch\":%d,", long_ctx, long_ctx, long_ctx);
        run_model(path, long_ctx, 0);
        printf(",\"dequant_f32\":{");
        run_model(f32path, long_ctx, 0);
        printf("}}");
    }
    if (long_prompt > 0) {
        int n_ctx = (long_prompt + N_GEN + 255) / 256 * 256;
        printf(",\"long_prompt\":{\"n_ctx\":%d,\"n_batch\":%d,\"n_ubatch\":%d,\"n_tokens\":%d,"
               "\"ids\":\"BOS, then x = (x*1103515245+12345) mod 2^31 from x = 33, id = 3 + (x>>8) mod (n_vocab-3)\",",
               n_ctx, n_ctx, LONG_UBATCH, long_prompt);
        run_model(path, n_ctx, long_prompt);
        printf(",\"dequant_f32\":{");
        run_model(f32path, n_ctx, long_prompt);
        printf("}}");
    }
    printf("}\n");
    unlink(f32path);
    llama_backend_free();
    return 0;
}
