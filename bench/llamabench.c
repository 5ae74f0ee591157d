// llamabench measures llama.cpp's prefill and decode speed on a GGUF file
// exactly the way `skulk bench` measures the native engine, so the two can be
// run side by side (bench/compare.sh) and compared as ratios.
//
// It calls the prebuilt libllama shipped by node-llama-cpp directly, as
// llama.cpp's own llama-bench does, and attaches one persistent ggml
// threadpool: without it ggml starts and joins worker threads for every
// llama_decode call, which makes multi-threaded single-token decode erratic
// (testdata/reference/PERF.md). Settings are llama.cpp's defaults as PERF.md records
// them: F16 KV cache, flash attention auto, n_batch = n_ubatch = 512,
// n_ctx = P + G (llama.cpp pads it), threadpool poll 50.
//
//   pp: clear the KV cache, decode P pseudo-random tokens as one batch;
//   tg: clear the KV cache, decode G single tokens, no sampling;
//   one untimed warm-up of each, then R timed runs of (pp, tg).
//
// Token ids come from the SplitMix64 stream internal/engine/bench uses, so both
// engines process identical tokens. Output: one JSON object with the fields
// of internal/engine/bench.Result.
//
// usage: llamabench -m FILE [-t THREADS] [-p P] [-n G] [-r R] [-check] [-v]

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

#ifndef LLAMA_LIB_DIR
#error "build with -DLLAMA_LIB_DIR=\"...\" (bench/build.sh does)"
#endif

enum { PP_SEED = 1, TG_SEED = 2 };

static bool verbose;

// quiet_log drops llama.cpp's chatter unless -v, but keeps its errors.
static void quiet_log(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (verbose || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

// tokens fills out with n ids in [0, vocab) from SplitMix64, the generator
// of internal/engine/bench.Tokens.
static void tokens(uint64_t seed, llama_token *out, int n, int vocab) {
    uint64_t x = seed;
    for (int i = 0; i < n; i++) {
        x += 0x9e3779b97f4a7c15ULL;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        out[i] = (llama_token)(z % (uint64_t)vocab);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "llamabench: %s\n", what);
    exit(1);
}

// run_pp times one prefill test and returns its tokens per second.
static double run_pp(struct llama_context *ctx, llama_token *toks, int n) {
    llama_memory_clear(llama_get_memory(ctx), false);
    double t0 = now();
    if (llama_decode(ctx, llama_batch_get_one(toks, n)) != 0) {
        die("llama_decode failed on the prompt batch");
    }
    llama_synchronize(ctx);
    return n / (now() - t0);
}

// run_tg times one decode test and returns its tokens per second.
static double run_tg(struct llama_context *ctx, llama_token *toks, int n) {
    llama_memory_clear(llama_get_memory(ctx), false);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&toks[i], 1)) != 0) {
            die("llama_decode failed on a single token");
        }
    }
    llama_synchronize(ctx);
    return n / (now() - t0);
}

// json_string prints s as a JSON string, dropping control characters.
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

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// print_stats prints min, median (the mean of the middle two for an even
// count, as internal/engine/bench.Summarize) and max, then the runs in order.
static void print_stats(const char *name, const double *runs, int n) {
    double *s = malloc(n * sizeof *s);
    memcpy(s, runs, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    printf("\"%s\":{\"min\":%.6g,\"median\":%.6g,\"max\":%.6g,\"runs\":[", name, s[0], med, s[n - 1]);
    for (int i = 0; i < n; i++) {
        printf("%s%.6g", i ? "," : "", runs[i]);
    }
    printf("]}");
    free(s);
}

// check tokenizes a fixed text and greedily generates a few tokens, printing
// both to stderr: proof that llama.cpp accepts the file's vocabulary and
// weights, not only its header.
static void check(struct llama_context *ctx, const struct llama_model *model) {
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const char *text = "Hello world\n";
    llama_token toks[64];
    int n = llama_tokenize(vocab, text, (int32_t)strlen(text), toks, 48, true, false);
    if (n <= 0) {
        die("llama_tokenize failed");
    }
    fprintf(stderr, "check: tokenize(\"Hello world\\n\") =");
    for (int i = 0; i < n; i++) {
        fprintf(stderr, " %d", toks[i]);
    }
    fprintf(stderr, "\ncheck: greedy =");
    llama_memory_clear(llama_get_memory(ctx), false);
    int nv = llama_vocab_n_tokens(vocab);
    struct llama_batch b = llama_batch_get_one(toks, n);
    for (int step = 0; step < 8; step++) {
        if (llama_decode(ctx, b) != 0) {
            die("llama_decode failed during the check");
        }
        const float *logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int i = 1; i < nv; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        char piece[64];
        int len = llama_token_to_piece(vocab, best, piece, sizeof piece - 1, 0, true);
        piece[len > 0 ? len : 0] = 0;
        fprintf(stderr, " %d(%s)", best, piece);
        toks[n] = best;
        b = llama_batch_get_one(&toks[n], 1);
    }
    fprintf(stderr, "\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int threads = 1, pp = 512, tg = 128, repeat = 5;
    bool do_check = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-m") && has) {
            path = argv[++i];
        } else if (!strcmp(a, "-t") && has) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(a, "-p") && has) {
            pp = atoi(argv[++i]);
        } else if (!strcmp(a, "-n") && has) {
            tg = atoi(argv[++i]);
        } else if (!strcmp(a, "-r") && has) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(a, "-check")) {
            do_check = true;
        } else if (!strcmp(a, "-v")) {
            verbose = true;
        } else {
            fprintf(stderr, "usage: llamabench -m FILE [-t THREADS] [-p P] [-n G] [-r R] [-check] [-v]\n");
            return 2;
        }
    }
    if (!path || threads <= 0 || pp <= 0 || tg <= 0 || repeat <= 0) {
        die("need -m FILE and positive -t, -p, -n, -r");
    }

    llama_log_set(quiet_log, NULL);
    // The package's CPU backends are separate libraries (one per instruction
    // set); ggml picks the best this CPU runs from the package directory.
    ggml_backend_load_all_from_path(LLAMA_LIB_DIR);
    llama_backend_init();
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) {
        die("no CPU backend found in " LLAMA_LIB_DIR);
    }
    // The threadpool functions live in the CPU backend library, which is
    // loaded at run time, so they are looked up through its registry.
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
    struct ggml_threadpool *(*tp_new)(struct ggml_threadpool_params *) =
        ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    void (*tp_free)(struct ggml_threadpool *) = ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
    if (!tp_new || !tp_free) {
        die("the CPU backend exports no threadpool functions");
    }

    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        die("llama.cpp could not load the model (run with -v for its log)");
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(pp + tg);
    // One llama_decode call must take the whole prompt; the physical batch
    // stays at llama.cpp's default of 512.
    cp.n_batch = (uint32_t)(pp > 512 ? pp : 512);
    cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = cp.type_v = GGML_TYPE_F16;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        die("llama_init_from_model failed");
    }
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    struct ggml_threadpool *tp = tp_new(&tpp);
    if (!tp) {
        die("ggml_threadpool_new failed");
    }
    llama_attach_threadpool(ctx, tp, NULL);

    if (do_check) {
        check(ctx, model);
    }

    int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_token *pp_toks = malloc(pp * sizeof *pp_toks);
    llama_token *tg_toks = malloc(tg * sizeof *tg_toks);
    tokens(PP_SEED, pp_toks, pp, vocab);
    tokens(TG_SEED, tg_toks, tg, vocab);
    double *pp_rates = malloc(repeat * sizeof(double));
    double *tg_rates = malloc(repeat * sizeof(double));
    run_pp(ctx, pp_toks, pp); // warm-up
    run_tg(ctx, tg_toks, tg);
    for (int r = 0; r < repeat; r++) {
        pp_rates[r] = run_pp(ctx, pp_toks, pp);
        tg_rates[r] = run_tg(ctx, tg_toks, tg);
    }

    printf("{\"engine\":\"llama.cpp\",\"model\":");
    json_string(path);
    printf(",\"threads\":%d,\"prompt_tokens\":%d,\"gen_tokens\":%d,\"repeat\":%d,\"weight_bytes\":%llu,"
           "\"system_info\":",
           threads, pp, tg, repeat, (unsigned long long)llama_model_size(model));
    json_string(llama_print_system_info());
    putchar(',');
    print_stats("prefill", pp_rates, repeat);
    putchar(',');
    print_stats("decode", tg_rates, repeat);
    printf("}\n");

    llama_detach_threadpool(ctx);
    tp_free(tp);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(pp_toks);
    free(tg_toks);
    free(pp_rates);
    free(tg_rates);
    return 0;
}
