// membw measures the machine's streaming read bandwidth: threads sum
// disjoint 1 MiB chunks of a buffer far larger than the caches, thread i
// taking chunks i, i+n, i+2n, …: the access pattern of a decode step, which
// hands each thread runs of about 1 MiB of weight rows and reads every
// weight once. (Two threads reading the two halves of the buffer instead
// measured about 10% less here.) bench/compare.sh divides a
// model's weight bytes by it to get the decode ceiling in tokens/s.
//
// usage: membw [-t THREADS] [-mib BUFFER_MIB] [-json]
// It reports the best of several passes for 1 thread and for THREADS
// (default: all online CPUs).

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PASSES = 5 };

enum { CHUNK_WORDS = (1 << 20) / sizeof(uint64_t) };

struct slice {
    const uint64_t *buf;
    size_t words;        // in the whole buffer
    size_t first, every; // this thread's first chunk and the chunk stride
    uint64_t sum;
};

static void *sum_slice(void *arg) {
    struct slice *s = arg;
    // Eight independent accumulators keep the loads, not an add chain, the
    // bottleneck; the compiler vectorizes the loop.
    uint64_t a[8] = {0};
    for (size_t c = s->first * CHUNK_WORDS; c < s->words; c += s->every * CHUNK_WORDS) {
        const uint64_t *p = s->buf + c;
        size_t n = s->words - c < CHUNK_WORDS ? s->words - c : CHUNK_WORDS;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            for (int k = 0; k < 8; k++) {
                a[k] += p[i + k];
            }
        }
        for (; i < n; i++) {
            a[0] += p[i];
        }
    }
    s->sum = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// sink keeps the sums observable so the reads cannot be optimized away.
volatile uint64_t sink;

// best_gbps returns the fastest of PASSES full reads of buf by n threads.
static double best_gbps(const uint64_t *buf, size_t words, int n) {
    pthread_t *th = calloc(n, sizeof *th);
    struct slice *sl = calloc(n, sizeof *sl);
    double best = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        double t0 = now();
        for (int i = 0; i < n; i++) {
            sl[i] = (struct slice){buf, words, (size_t)i, (size_t)n, 0};
            if (pthread_create(&th[i], NULL, sum_slice, &sl[i]) != 0) {
                perror("membw: pthread_create");
                exit(1);
            }
        }
        uint64_t total = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            total += sl[i].sum;
        }
        double gbps = (double)words * sizeof *buf / (now() - t0) / 1e9;
        sink += total;
        if (gbps > best) {
            best = gbps;
        }
    }
    free(th);
    free(sl);
    return best;
}

int main(int argc, char **argv) {
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    long mib = 1024;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-mib") && i + 1 < argc) {
            mib = atol(argv[++i]);
        } else if (!strcmp(argv[i], "-json")) {
            json = 1;
        } else {
            fprintf(stderr, "usage: membw [-t THREADS] [-mib BUFFER_MIB] [-json]\n");
            return 2;
        }
    }
    if (threads <= 0 || mib <= 0) {
        fprintf(stderr, "membw: -t and -mib must be positive\n");
        return 2;
    }
    size_t words = (size_t)mib * (1 << 20) / sizeof(uint64_t);
    uint64_t *buf = malloc(words * sizeof *buf);
    if (!buf) {
        perror("membw: malloc");
        return 1;
    }
    // Writing every word faults the pages in, so the passes time reads only.
    for (size_t i = 0; i < words; i++) {
        buf[i] = i;
    }
    double one = best_gbps(buf, words, 1);
    double many = best_gbps(buf, words, threads);
    if (json) {
        printf("{\"buffer_mib\":%ld,\"threads\":%d,\"read_gbps_1\":%.3f,\"read_gbps_n\":%.3f}\n", mib, threads, one, many);
    } else {
        printf("streaming read over %ld MiB, best of %d passes:\n", mib, PASSES);
        printf("  1 thread%s %6.2f GB/s\n", threads == 1 ? ": " : ":  ", one);
        printf("  %d threads: %6.2f GB/s\n", threads, many);
    }
    free(buf);
    return 0;
}
