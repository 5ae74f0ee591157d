// vecdotbench times ggml's CPU vec_dot kernel for one weight type against
// its activation type, one row at a time as ggml's mul_mat calls it, so the
// native engine's one-row kernels (BenchmarkVecDotOneRow in
// internal/engine/tensor) can be compared with it per row on the same row
// length. It loads the same CPU variant llama.cpp picks at run time (give
// another with -variant, e.g. zen4 on an AVX-512 machine).
//
// Rows: 64 rows of N elements (in L2 for N ≤ 8192), random quants and
// scales; one activation row quantized by the type's from_float. Output: one
// line per 0.2 s run, "TYPE n=N ns/row=X cpu-ns/row=Y", Y from the thread's
// CPU clock, which a shared machine's other work disturbs less.
//
// usage: vecdotbench [-type q8_0|q4_0] [-n N] [-r RUNS] [-variant haswell]

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-cpu.h"
#include "ggml.h"

#ifndef LLAMA_LIB_DIR
#error "build with -DLLAMA_LIB_DIR=\"...\" (bench/build.sh does)"
#endif

enum { NROWS = 64 };

static void die(const char *msg) {
    fprintf(stderr, "vecdotbench: %s\n", msg);
    exit(1);
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// gauss returns a roughly normal float from a xorshift stream.
static float gauss(uint64_t *s) {
    float sum = 0;
    for (int i = 0; i < 4; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        sum += (float)(*s >> 40) / (float)(1 << 24) - 0.5f;
    }
    return sum;
}

int main(int argc, char **argv) {
    const char *tname = "q8_0", *variant = "haswell";
    int n = 2048, runs = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-type")) tname = argv[i + 1];
        else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-variant")) variant = argv[i + 1];
        else die("usage: vecdotbench [-type q8_0|q4_0] [-n N] [-r RUNS] [-variant haswell]");
    }
    enum ggml_type type;
    if (!strcmp(tname, "q8_0")) type = GGML_TYPE_Q8_0;
    else if (!strcmp(tname, "q4_0")) type = GGML_TYPE_Q4_0;
    else die("-type: want q8_0 or q4_0");
    if (n <= 0 || n % 32) die("-n: want a positive multiple of 32");

    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", LLAMA_LIB_DIR, variant);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) die(dlerror());
    void (*cpu_init)(void) = (void (*)(void))dlsym(lib, "ggml_cpu_init");
    const struct ggml_type_traits_cpu *(*traits)(enum ggml_type) =
        (const struct ggml_type_traits_cpu *(*)(enum ggml_type))dlsym(lib, "ggml_get_type_traits_cpu");
    if (!cpu_init || !traits) die("variant lacks ggml_cpu_init/ggml_get_type_traits_cpu");
    cpu_init();
    const struct ggml_type_traits_cpu *tw = traits(type);
    const struct ggml_type_traits_cpu *ta = traits(tw->vec_dot_type);

    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    float *x = malloc(sizeof(float) * (size_t)n * NROWS);
    for (size_t i = 0; i < (size_t)n * NROWS; i++) x[i] = 0.05f * gauss(&seed);
    size_t rb = ggml_row_size(type, n), ab = ggml_row_size(tw->vec_dot_type, n);
    uint8_t *w = malloc(rb * NROWS), *act = malloc(ab);
    ggml_quantize_chunk(type, x, w, 0, NROWS, n, NULL);
    for (int i = 0; i < n; i++) x[i] = gauss(&seed);
    ta->from_float(x, act, n);

    float out[NROWS], sink = 0;
    for (int run = 0; run < runs; run++) {
        long iters = 0;
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t;
        do {
            for (int r = 0; r < NROWS; r++) {
                tw->vec_dot(n, &out[r], 0, w + r * rb, 0, act, 0, 1);
            }
            sink += out[iters % NROWS];
            iters++;
        } while ((t = clock_s(CLOCK_MONOTONIC)) - t0 < 0.2);
        double c = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        printf("%s n=%d ns/row=%.1f cpu-ns/row=%.1f\n", tname, n, (t - t0) / ((double)iters * NROWS) * 1e9,
               c / ((double)iters * NROWS) * 1e9);
    }
    if (sink == 12345.0f) puts("");
    return 0;
}
