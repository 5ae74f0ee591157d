// kquantbench times ggml's CPU vec_dot for one weight type against Q8_K
// activations, the kernel llama.cpp runs per weight row on AVX2 for the
// K-quants (its tinyBLAS tiles cover only Q8_0/Q4_0 there), so the native
// engine's one-row kernels can be compared with it (BenchmarkKQuantRow in
// internal/engine/tensor reports the same ns/row on the same shapes).
//
// It dlopens the prebuilt libggml-cpu variant node-llama-cpp ships for this
// CPU class (haswell: AVX2+FMA, what ggml's loader picks on an AVX2-only
// machine), quantizes 64 Gaussian rows of n elements with ggml itself, and
// times vec_dot over the 64 rows, best of R repeats of a ~0.2 s loop.
//
// usage: kquantbench [-type q4_k|q6_k] [-n N] [-r R] [-variant haswell]
// Output: one line, "TYPE n=N ns/row=X".

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

enum { NROWS = 64 };

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// gauss fills x with a deterministic normal-ish stream (sum of uniforms).
static void gauss(float *x, int n, uint64_t *s, float sd) {
	for (int i = 0; i < n; i++) {
		float acc = 0;
		for (int k = 0; k < 4; k++) {
			*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
			acc += (float)((*s >> 40) & 0xffffff) / 16777216.0f;
		}
		x[i] = (acc - 2.0f) * sd * 1.732f;
	}
}

int main(int argc, char **argv) {
	const char *tname = "q4_k", *variant = "haswell";
	int n = 2048, reps = 5;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-type")) tname = argv[i + 1];
		else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-r")) reps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-variant")) variant = argv[i + 1];
		else {
			fprintf(stderr, "usage: %s [-type q4_k|q6_k] [-n N] [-r R] [-variant V]\n", argv[0]);
			return 2;
		}
	}
	enum ggml_type type;
	if (!strcmp(tname, "q4_k")) type = GGML_TYPE_Q4_K;
	else if (!strcmp(tname, "q6_k")) type = GGML_TYPE_Q6_K;
	else if (!strcmp(tname, "q5_k")) type = GGML_TYPE_Q5_K;
	else {
		fprintf(stderr, "kquantbench: unknown type %s\n", tname);
		return 2;
	}
	if (n <= 0 || n % 256 != 0) {
		fprintf(stderr, "kquantbench: n must be a positive multiple of 256\n");
		return 2;
	}

	char path[4096];
	snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", LLAMA_LIB_DIR, variant);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "kquantbench: %s\n", dlerror());
		return 1;
	}
	void (*cpu_init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
	const struct ggml_type_traits_cpu *(*traits)(enum ggml_type) =
		(const struct ggml_type_traits_cpu *(*)(enum ggml_type))dlsym(h, "ggml_get_type_traits_cpu");
	if (!cpu_init || !traits) {
		fprintf(stderr, "kquantbench: %s lacks ggml_cpu_init or ggml_get_type_traits_cpu\n", path);
		return 1;
	}
	cpu_init();
	const struct ggml_type_traits_cpu *wt = traits(type);
	const struct ggml_type_traits_cpu *at = traits(wt->vec_dot_type);
	if (wt->vec_dot_type != GGML_TYPE_Q8_K || !at->from_float) {
		fprintf(stderr, "kquantbench: unexpected vec_dot_type %d\n", wt->vec_dot_type);
		return 1;
	}

	size_t rb = ggml_row_size(type, n), ab = ggml_row_size(GGML_TYPE_Q8_K, n);
	float *x = malloc(sizeof(float) * (size_t)n * NROWS);
	uint8_t *rows = malloc(rb * NROWS), *act = malloc(ab);
	uint64_t seed = 1;
	gauss(x, n * NROWS, &seed, 0.05f);
	ggml_quantize_chunk(type, x, rows, 0, NROWS, n, NULL);
	gauss(x, n, &seed, 1.0f);
	at->from_float(x, act, n);

	volatile float sink = 0;
	double best = INFINITY;
	long iters = 1;
	for (int r = 0; r < reps; r++) {
		double t0, dt;
		for (;;) {
			t0 = now();
			for (long it = 0; it < iters; it++) {
				for (int i = 0; i < NROWS; i++) {
					float s;
					wt->vec_dot(n, &s, 0, rows + (size_t)i * rb, 0, act, 0, 1);
					sink += s;
				}
			}
			dt = now() - t0;
			if (dt >= 0.2) break;
			iters *= 2;
		}
		double ns = dt * 1e9 / ((double)iters * NROWS);
		if (ns < best) best = ns;
	}
	printf("%s n=%d ns/row=%.1f\n", tname, n, best);
	return 0;
}
