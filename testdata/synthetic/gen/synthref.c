// synthref quantizes a synthetic model with llama.cpp's own quantizer and
// writes llama.cpp's logits on it in the synthref/1 format
// (testdata/synthetic/README.md), the references
// internal/engine/model's TestSyntheticReferences checks the engine against.
// It drives the prebuilt libllama that bench/package-lock.json pins; run.sh
// builds and runs it.
//
//   synthref quant IN.gguf OUT.gguf FTYPE        llama_model_quantize, pure
//   synthref ref MODEL.gguf DEQUANT.gguf NAME WEIGHT_TYPE FTYPE OUT.json
//
// ref runs the public prompts p1 and p33 on MODEL (the main "prompts") and
// on DEQUANT, llama.cpp's F32 copy of MODEL ("dequant_f32"), with the
// README's settings: CPU only, 1 thread, n_ctx = n_batch = n_ubatch 256,
// flash attention off, F32 K/V cache, whole prompt as one batch with every
// position's logits, then 24 greedy steps of single-token decodes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

#define NGEN 24
#define NSTEPLOGITS 4

static void die(const char *msg) { fprintf(stderr, "synthref: %s\n", msg); exit(1); }
static void quiet_log(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static const llama_token p33[] = {1, 76, 512, 661, 982, 546, 164, 910, 643, 958, 782, 644, 605, 428, 797, 416, 777,
	539, 593, 264, 860, 342, 236, 128, 802, 184, 3, 613, 855, 132, 587, 844, 490};
static const llama_token p1[] = {1};

static void floats(FILE *f, const float *x, int n) {
	fputc('[', f);
	for (int i = 0; i < n; i++) fprintf(f, "%s%.9g", i ? "," : "", x[i]);
	fputc(']', f);
}

// top2 returns the argmax (lowest id on ties) and the runner-up.
static void top2(const float *x, int n, int *a, int *b) {
	*a = 0; *b = -1;
	for (int i = 1; i < n; i++) {
		if (x[i] > x[*a]) { *b = *a; *a = i; }
		else if (*b < 0 || x[i] > x[*b]) *b = i;
	}
}

static void prompt(FILE *f, struct llama_context *ctx, int nv, const char *name, const llama_token *ids, int n, int last) {
	llama_memory_clear(llama_get_memory(ctx), true);
	struct llama_batch b = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		b.token[i] = ids[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
	}
	b.n_tokens = n;
	if (llama_decode(ctx, b) != 0) die("llama_decode failed on a prompt");
	fprintf(f, "{\"name\":\"%s\",\"ids\":[", name);
	for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
	fprintf(f, "],\"prompt_logits\":[");
	for (int i = 0; i < n; i++) {
		if (i) fputc(',', f);
		floats(f, llama_get_logits_ith(ctx, i), nv);
	}
	llama_batch_free(b);
	float *cur = malloc(sizeof(float) * nv), *steps = malloc(sizeof(float) * nv * NSTEPLOGITS);
	memcpy(cur, llama_get_logits_ith(ctx, n - 1), sizeof(float) * nv);
	int gen[NGEN], ru[NGEN];
	float chosen[NGEN], rul[NGEN];
	for (int k = 0; k < NGEN; k++) {
		if (k > 0) {
			llama_token t = gen[k - 1];
			if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) die("llama_decode failed on a step");
			memcpy(cur, llama_get_logits_ith(ctx, -1), sizeof(float) * nv);
		}
		if (k < NSTEPLOGITS) memcpy(steps + k * nv, cur, sizeof(float) * nv);
		top2(cur, nv, &gen[k], &ru[k]);
		chosen[k] = cur[gen[k]]; rul[k] = cur[ru[k]];
	}
	fprintf(f, "],\"generated\":[");
	for (int k = 0; k < NGEN; k++) fprintf(f, "%s%d", k ? "," : "", gen[k]);
	fprintf(f, "],\"chosen_logit\":");
	floats(f, chosen, NGEN);
	fprintf(f, ",\"runner_up\":[");
	for (int k = 0; k < NGEN; k++) fprintf(f, "%s%d", k ? "," : "", ru[k]);
	fprintf(f, "],\"runner_up_logit\":");
	floats(f, rul, NGEN);
	fprintf(f, ",\"top1_top2_gap\":[");
	for (int k = 0; k < NGEN; k++) fprintf(f, "%s%.9g", k ? "," : "", (double)chosen[k] - (double)rul[k]);
	fprintf(f, "],\"step_logits\":[");
	for (int k = 0; k < NSTEPLOGITS; k++) {
		if (k) fputc(',', f);
		floats(f, steps + k * nv, nv);
	}
	fprintf(f, "]}%s", last ? "" : ",");
	free(cur); free(steps);
}

static void prompts(FILE *f, const char *path) {
	struct llama_model_params mp = llama_model_default_params();
	struct llama_model *model = llama_model_load_from_file(path, mp);
	if (!model) die("cannot load the model");
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = 256; cp.n_batch = 256; cp.n_ubatch = 256; cp.n_seq_max = 1;
	cp.n_threads = 1; cp.n_threads_batch = 1;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (!ctx) die("llama_init_from_model failed");
	int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
	fprintf(f, "\"prompts\":[");
	prompt(f, ctx, nv, "p1", p1, 1, 0);
	prompt(f, ctx, nv, "p33", p33, (int)(sizeof p33 / sizeof p33[0]), 1);
	fputc(']', f);
	llama_free(ctx);
	llama_model_free(model);
}

int main(int argc, char **argv) {
	llama_log_set(quiet_log, NULL);
	ggml_backend_load_all_from_path(LLAMA_LIB_DIR);
	llama_backend_init();
	if (argc == 5 && strcmp(argv[1], "quant") == 0) {
		struct llama_model_quantize_params qp = llama_model_quantize_default_params();
		qp.ftype = (enum llama_ftype)atoi(argv[4]);
		qp.pure = true;
		qp.allow_requantize = true; // for the F32 copy of a quantized model
		qp.nthread = 1;
		if (llama_model_quantize(argv[2], argv[3], &qp) != 0) die("llama_model_quantize failed");
		return 0;
	}
	if (argc != 8 || strcmp(argv[1], "ref") != 0) {
		fprintf(stderr, "usage: synthref quant IN OUT FTYPE | synthref ref MODEL DEQUANT NAME WEIGHT_TYPE FTYPE OUT.json\n");
		return 2;
	}
	FILE *f = fopen(argv[7], "w");
	if (!f) die("cannot write the output");
	fprintf(f, "{\"format\":\"synthref/1\",\"split\":\"public\",");
	fprintf(f, "\"model\":{\"file\":\"%s.gguf\",\"description\":\"synth-llama-f32 quantized by llama.cpp to %s (pure)\","
	           "\"weight_type\":\"%s\",\"general.file_type\":%s,"
	           "\"quantize\":{\"command\":\"synthref quant synth-llama-f32.gguf %s.gguf %s\",\"ftype\":%s,\"pure\":true}},",
	        argv[4], argv[5], argv[5], argv[6], argv[4], argv[6], argv[6]);
	fprintf(f, "\"llama_cpp\":{\"release\":\"node-llama-cpp@3.21.1\",\"system_info\":\"%s\"},", llama_print_system_info());
	fprintf(f, "\"settings\":{\"n_ctx\":256,\"n_batch\":256,\"n_ubatch\":256,\"n_seq_max\":1,\"n_threads\":1,"
	           "\"flash_attn\":\"disabled\",\"kv_cache_type\":\"f32\",\"weight_repacking_extra_bufts\":true,"
	           "\"offload\":\"none (CPU only)\",\"generator\":\"testdata/synthetic/gen/synthref.c\"},");
	// The README's bounds for weights whose activations are rounded to 8 bits.
	fprintf(f, "\"tolerance\":{\"weight_type\":\"%s\",\"group\":\"8-bit activations\","
	           "\"engine_f32_activations\":{\"max_abs_logit_diff\":5,\"rms_logit_diff\":0.75,\"top1_must_agree_where_gap_at_least\":2},"
	           "\"engine_mimicking_llamacpp_activation_rounding\":{\"max_abs_logit_diff\":1.5,\"rms_logit_diff\":0.2,\"top1_must_agree_where_gap_at_least\":0.5},"
	           "\"engine_f32_activations_vs_dequant_f32_section\":{\"max_abs_logit_diff\":0.00075,\"rms_logit_diff\":5e-05,\"top1_must_agree_where_gap_at_least\":0.001},"
	           "\"see\":\"shared/reference/synthetic/README.md (Tolerances)\"},",
	        argv[5]);
	fprintf(f, "\"n_vocab\":1024,");
	prompts(f, argv[2]);
	fprintf(f, ",\"dequant_f32\":{\"what\":\"llama.cpp on an F32 copy holding its own dequantization of every weight\","
	           "\"copy_made_with\":\"synthref quant %s.gguf %s-dequant-f32.gguf 0\",", argv[4], argv[4]);
	prompts(f, argv[3]);
	fprintf(f, "}}\n");
	llama_backend_free();
	return fclose(f) != 0;
}
