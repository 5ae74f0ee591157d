// vecdotbench times ggml's CPU vec_dot for one weight type: the kernel
// llama.cpp's matrix multiply calls per (row, activation) pair, so its
// ns/row can be set beside our one-row kernel's (go test -bench
// 'VecDotRowNs' ./internal/engine/tensor) on the same shapes.
//
// The CPU backend variant (default haswell: AVX2, FMA, F16C) is loaded
// with dlopen from the prebuilt node-llama-cpp libraries, as ggml's backend
// registry would. Weights are Gaussian rows quantized by
// ggml_quantize_chunk, the activation a Gaussian row through the type's
// from_float into its vec_dot_type.
//
// With -gemv 1 (mxfp4 only) it times instead the product llama.cpp's
// decode takes on AVX2: the rows repacked eight at a time into
// block_mxfp4x8 (as repack.cpp's repack_mxfp4_to_mxfp4_8_bl does) and
// multiplied by ggml_gemv_mxfp4_8x8_q8_0.
//
// usage: vecdotbench -type mxfp4|iq4_nl|iq4_xs|q8_0|q4_0|q4_k|q6_k
//                    [-n N] [-rows R] [-ms MS] [-variant haswell] [-gemv 1]
// Output: one line, "TYPE n=N ns/row=X sum=S", X from the fastest pass
// over the rows.

#include <dlfcn.h>
#include <math.h>
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

static const struct {
    const char *name;
    enum ggml_type type;
} types[] = {
    {"mxfp4", GGML_TYPE_MXFP4}, {"iq4_nl", GGML_TYPE_IQ4_NL}, {"iq4_xs", GGML_TYPE_IQ4_XS},
    {"q8_0", GGML_TYPE_Q8_0},   {"q4_0", GGML_TYPE_Q4_0},     {"q4_k", GGML_TYPE_Q4_K},
    {"q6_k", GGML_TYPE_Q6_K},
};

// gauss returns a standard normal value from a fixed xorshift stream.
static float gauss(uint64_t *s) {
    double u[2];
    for (int i = 0; i < 2; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        u[i] = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
    }
    return (float)(sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// time_gemv repacks MXFP4 rows (17-byte blocks: exponent, 16 code bytes)
// eight at a time into block_mxfp4x8 (eight exponents, then the rows'
// code bytes interleaved eight at a time) and times ggml's gemv over them.
static int time_gemv(void *lib, const char *tname, int n, int nrows, int ms, const uint8_t *w, const uint8_t *act) {
    typedef void (*gemv_fn)(int, float *, size_t, const void *, const void *, int, int);
    gemv_fn gemv = (gemv_fn)dlsym(lib, "ggml_gemv_mxfp4_8x8_q8_0");
    if (!gemv) {
        fprintf(stderr, "vecdotbench: the library lacks ggml_gemv_mxfp4_8x8_q8_0\n");
        return 1;
    }
    int nb = n / 32;
    uint8_t *pk = malloc((size_t)nrows / 8 * (size_t)nb * 136);
    uint8_t *dst = pk;
    for (int r0 = 0; r0 < nrows; r0 += 8) {
        for (int b = 0; b < nb; b++) {
            for (int i = 0; i < 8; i++) {
                dst[i] = w[((size_t)(r0 + i) * nb + b) * 17];
            }
            for (int i = 0; i < 16; i++) {
                const uint8_t *src = w + ((size_t)(r0 + i % 8) * nb + b) * 17 + 1 + (i / 8) * 8;
                memcpy(dst + 8 + i * 8, src, 8);
            }
            dst += 136;
        }
    }
    float *out = malloc(sizeof(float) * (size_t)nrows);
    float sum = 0;
    double best = 1e30, t0 = now(), t = t0;
    while (t - t0 < ms * 1e-3) {
        double p0 = now();
        gemv(n, out, (size_t)nrows, pk, act, 1, nrows);
        t = now();
        for (int r = 0; r < nrows; r++) {
            sum += out[r];
        }
        if (t - p0 < best) {
            best = t - p0;
        }
    }
    printf("%s gemv8x8 n=%d ns/row=%.1f sum=%g\n", tname, n, best * 1e9 / nrows, (double)sum);
    return 0;
}

int main(int argc, char **argv) {
    const char *tname = "mxfp4", *variant = "haswell";
    int n = 2880, nrows = 64, ms = 1000, gemv = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-type")) {
            tname = argv[i + 1];
        } else if (!strcmp(argv[i], "-n")) {
            n = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-rows")) {
            nrows = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-ms")) {
            ms = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-gemv")) {
            gemv = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-variant")) {
            variant = argv[i + 1];
        } else {
            fprintf(stderr, "vecdotbench: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    enum ggml_type type = GGML_TYPE_COUNT;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (!strcmp(types[i].name, tname)) {
            type = types[i].type;
        }
    }
    if (gemv && (type != GGML_TYPE_MXFP4 || nrows % 8 != 0)) {
        fprintf(stderr, "vecdotbench: -gemv 1 takes -type mxfp4 and -rows a multiple of 8\n");
        return 2;
    }
    if (type == GGML_TYPE_COUNT || n <= 0 || nrows <= 0 || n % ggml_blck_size(type) != 0) {
        fprintf(stderr, "vecdotbench: bad -type %s or -n %d (a multiple of the block size) or -rows %d\n", tname, n, nrows);
        return 2;
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", LLAMA_LIB_DIR, variant);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "vecdotbench: %s\n", dlerror());
        return 1;
    }
    void (*cpu_init)(void) = (void (*)(void))dlsym(lib, "ggml_cpu_init");
    const struct ggml_type_traits_cpu *(*traits_of)(enum ggml_type) =
        (const struct ggml_type_traits_cpu *(*)(enum ggml_type))dlsym(lib, "ggml_get_type_traits_cpu");
    if (!cpu_init || !traits_of) {
        fprintf(stderr, "vecdotbench: %s lacks ggml_cpu_init or ggml_get_type_traits_cpu\n", path);
        return 1;
    }
    cpu_init();
    const struct ggml_type_traits_cpu *tr = traits_of(type);
    const struct ggml_type_traits_cpu *atr = traits_of(tr->vec_dot_type);
    if (!tr->vec_dot || !atr->from_float) {
        fprintf(stderr, "vecdotbench: no vec_dot for %s\n", tname);
        return 1;
    }

    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    float *x = malloc(sizeof(float) * (size_t)n * (size_t)nrows);
    for (size_t i = 0; i < (size_t)n * (size_t)nrows; i++) {
        x[i] = 0.05f * gauss(&seed);
    }
    size_t rb = ggml_row_size(type, n);
    uint8_t *w = malloc(rb * (size_t)nrows);
    ggml_quantize_chunk(type, x, w, 0, nrows, n, NULL);
    for (int i = 0; i < n; i++) {
        x[i] = gauss(&seed);
    }
    uint8_t *act = malloc(ggml_row_size(tr->vec_dot_type, n));
    atr->from_float(x, act, n);

    // Passes over the rows until ms have gone; the fastest pass is the
    // figure, the one least disturbed by other work on a shared machine.
    float sum = 0, s;
    if (gemv) {
        return time_gemv(lib, tname, n, nrows, ms, w, act);
    }
    double best = 1e30, t0 = now(), t = t0;
    while (t - t0 < ms * 1e-3) {
        double p0 = now();
        for (int r = 0; r < nrows; r++) {
            tr->vec_dot(n, &s, 0, w + (size_t)r * rb, 0, act, 0, 1);
            sum += s;
        }
        t = now();
        if (t - p0 < best) {
            best = t - p0;
        }
    }
    printf("%s n=%d ns/row=%.1f sum=%g\n", tname, n, best * 1e9 / nrows, (double)sum);
    return 0;
}
