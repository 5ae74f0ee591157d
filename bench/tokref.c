// tokref writes llama.cpp's tokenization of texts as JSON, the reference the
// tokenizer tests compare against for vocabularies that have no fixture of
// their own (internal/engine/tokenizer/testdata/gen-gpt4o.sh drives it).
//
// It loads FILE vocabulary-only through the prebuilt libllama that
// node-llama-cpp ships, like llamabench.c; bench/build.sh builds it. Each
// INPUT holds texts separated by "\n__ggml_vocab_test__\n", the format of
// llama.cpp's ggml-vocab-*.gguf.inp fixtures. Every text is tokenized twice:
// "ids" without special handling (add_special = parse_special = false) and
// "ids_default" with both on.
//
// Texts must not contain NUL bytes.
//
// usage: tokref -m FILE INPUT... > OUT.json

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#ifndef LLAMA_LIB_DIR
#error "build with -DLLAMA_LIB_DIR=\"...\" (bench/build.sh does)"
#endif

static const char SEP[] = "\n__ggml_vocab_test__\n";

static void quiet_log(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static void die(const char *what, const char *arg) {
    fprintf(stderr, "tokref: %s%s\n", what, arg ? arg : "");
    exit(1);
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        die("cannot open ", path);
    }
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap + 1);
    size_t got;
    while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
    }
    if (!b || ferror(f)) {
        die("cannot read ", path);
    }
    fclose(f);
    b[len] = 0;
    *n = len;
    return b;
}

// put_string writes s[0:n] as a JSON string; the texts are UTF-8, so only
// quotes, backslashes and control characters need escapes.
static void put_string(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20 || c == 0x7f) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

static void put_ids(const struct llama_vocab *vocab, const char *text, size_t n, bool special) {
    int32_t cap = (int32_t)n + 8;
    llama_token *ids = malloc(sizeof(llama_token) * (size_t)cap);
    int32_t got = llama_tokenize(vocab, text, (int32_t)n, ids, cap, special, special);
    if (got < 0) {
        die("llama_tokenize needs a larger buffer", NULL);
    }
    putchar('[');
    for (int32_t i = 0; i < got; i++) {
        printf(i ? ",%d" : "%d", ids[i]);
    }
    putchar(']');
    free(ids);
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[1], "-m") != 0) {
        die("usage: tokref -m FILE INPUT...", NULL);
    }
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(LLAMA_LIB_DIR);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model) {
        die("llama.cpp could not load ", argv[2]);
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    printf("{\"cases\":[");
    bool first = true;
    for (int a = 3; a < argc; a++) {
        size_t len;
        char *all = read_all(argv[a], &len);
        // Split as llama.cpp's test-tokenizer-0 does: every text ends
        // with SEP, and text after the last SEP is one more.
        for (char *p = all; p < all + len;) {
            char *end = strstr(p, SEP);
            size_t n = end ? (size_t)(end - p) : strlen(p);
            printf(first ? "\n" : ",\n");
            first = false;
            printf("{\"text\":");
            put_string(p, n);
            printf(",\"ids\":");
            put_ids(vocab, p, n, false);
            printf(",\"ids_default\":");
            put_ids(vocab, p, n, true);
            printf("}");
            p = end ? end + sizeof(SEP) - 1 : all + len;
        }
        free(all);
    }
    printf("\n]}\n");
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
