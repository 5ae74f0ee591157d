// ggmlref writes llama.cpp's own results for one GGML tensor type, the
// reference TestGGMLReference (ggmlref_test.go) checks the Go kernels
// against: ggml's quantizer (ggml_quantize_chunk, what llama_model_quantize
// runs without an importance matrix), its dequantizer (to_float) and the
// CPU backend's vec_dot with activations rounded by the backend's own
// from_float, once with the generic build (libggml-cpu-x64) and once with the
// AVX2 build (libggml-cpu-haswell). Built and run by gen.sh.
//
// usage: ggmlref TYPE_ID N NROWS GENERIC_CPU_LIB AVX2_CPU_LIB OUT
//
// Output, little-endian: "GGMLREF1", u32 type, u32 n, u32 nrows, then
// weights f32[nrows][n], quantized bytes, dequantized f32[nrows][n],
// activations f32[nrows][n], activation bytes (vec_dot_type),
// generic vec_dot f32[nrows], avx2 vec_dot f32[nrows].
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"

typedef const struct ggml_type_traits_cpu *(*traits_fn)(enum ggml_type);

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double unif(void) {
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static float gauss(void) { return (float)(sqrt(-2 * log(unif())) * cos(6.283185307179586 * unif())); }

// fill gives each row a different shape, so the quantizers' edge paths run:
// plain Gaussian rows at several scales, rows with zero, constant, tiny and
// outlier blocks, a uniform row, and blocks whose largest magnitude sits
// just below or at a power of two (MXFP4's exponent is floor(log2f(amax))).
static void fill(float *x, int n, int row) {
	for (int i = 0; i < n; i++) {
		float v = gauss();
		if (row % 10 >= 8) {
			int b = i / 32, k = b % 9 - 4;
			float top = ldexpf(1.0f - (float)(b % 3) * 0x1p-24f, k);
			x[i] = i % 32 == 5 ? (row % 10 == 8 ? top : -top) : 0.2f * ldexpf(1.0f, k) * (float)tanh(v);
			continue;
		}
		switch (row % 8) {
		case 0: x[i] = 0.02f * v; break;
		case 1: x[i] = 1.5f * v; break;
		case 2: x[i] = (i / 32) % 3 == 0 ? 0.0f : 0.05f * v; break;           // zero blocks
		case 3: x[i] = (i / 32) % 4 == 1 ? 0.25f : 0.1f * v; break;           // constant blocks
		case 4: x[i] = (i / 32) % 2 ? 1e-9f * v : 0.01f * v; break;            // tiny blocks
		case 5: x[i] = i % 37 == 0 ? 8.0f * v : 0.03f * v; break;             // outliers
		case 6: x[i] = (float)(unif() * 2 - 1); break;                        // uniform
		default: x[i] = (i / 16) % 2 ? fabsf(0.04f * v) : -fabsf(0.04f * v); // one-signed runs
		}
	}
}

static const struct ggml_type_traits_cpu *load(const char *path, enum ggml_type t) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); exit(1); }
	void (*init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
	traits_fn tr = (traits_fn)dlsym(h, "ggml_get_type_traits_cpu");
	if (!init || !tr) { fprintf(stderr, "%s: missing symbols\n", path); exit(1); }
	init();
	return tr(t);
}

static void put32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }

int main(int argc, char **argv) {
	if (argc != 7) { fprintf(stderr, "usage: ggmlref TYPE N NROWS GENERIC_LIB AVX2_LIB OUT\n"); return 2; }
	enum ggml_type t = (enum ggml_type)atoi(argv[1]);
	int n = atoi(argv[2]), nrows = atoi(argv[3]);
	const struct ggml_type_traits_cpu *gen = load(argv[4], t), *avx = load(argv[5], t);
	enum ggml_type at = gen->vec_dot_type;
	const struct ggml_type_traits_cpu *genAct = load(argv[4], at);
	size_t rb = ggml_row_size(t, n), ab = ggml_row_size(at, n);
	float *x = malloc(sizeof(float) * n * nrows), *deq = malloc(sizeof(float) * n * nrows);
	float *a = malloc(sizeof(float) * n * nrows), *dg = malloc(sizeof(float) * nrows), *da = malloc(sizeof(float) * nrows);
	uint8_t *q = malloc(rb * nrows), *aq = malloc(ab * nrows);
	for (int r = 0; r < nrows; r++) {
		fill(x + (size_t)r * n, n, r);
		for (int i = 0; i < n; i++) a[(size_t)r * n + i] = gauss();
	}
	ggml_quantize_chunk(t, x, q, 0, nrows, n, NULL);
	ggml_get_type_traits(t)->to_float(q, deq, (int64_t)n * nrows);
	for (int r = 0; r < nrows; r++) {
		genAct->from_float(a + (size_t)r * n, aq + r * ab, n);
		gen->vec_dot(n, &dg[r], 0, q + r * rb, 0, aq + r * ab, 0, 1);
		avx->vec_dot(n, &da[r], 0, q + r * rb, 0, aq + r * ab, 0, 1);
	}
	FILE *f = fopen(argv[6], "wb");
	if (!f) { perror(argv[6]); return 1; }
	fwrite("GGMLREF1", 8, 1, f);
	put32(f, t); put32(f, n); put32(f, nrows);
	fwrite(x, sizeof(float), (size_t)n * nrows, f);
	fwrite(q, rb, nrows, f);
	fwrite(deq, sizeof(float), (size_t)n * nrows, f);
	fwrite(a, sizeof(float), (size_t)n * nrows, f);
	fwrite(aq, ab, nrows, f);
	fwrite(dg, sizeof(float), nrows, f);
	fwrite(da, sizeof(float), nrows, f);
	return fclose(f) != 0;
}
