/* bench/floor_layout.c: bench-floor-layout [ROUNDS]: what the layout of a task record
 * costs a build on this machine, with no runtime at all. bench-sched's random DAG (1M
 * tasks, each naming up to 3 of the 100 before it) built as records of 64, 96 or 128
 * bytes, packed after 16-byte alignment in one stream with their successor arrays ("u")
 * or 64-byte aligned in a region of their own ("s"), written by scalar stores or, where
 * the CPU has AVX-512, by whole 64-byte stores ("v"; "vn" without the software
 * prefetch); each variant in memory with transparent huge pages asked for (huge 1) and
 * refused (huge 0). One JSON line per variant and round: the median of 5 builds, ns per
 * task. RESULTS 10.8: on the GPU machine's hosts no variant beats 96-byte records by
 * much, so a smaller task is not what the random shape's build waits on there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define VEC_OK 1
#else
#define VEC_OK 0
#endif

#include "common/timing.h"
#include "common/floor_rec.h"

enum { N = 1000000, WINDOW = 100, REPS = 5 };
enum { SCALAR, VEC };

typedef struct mem {
    char *rec, *succ;   /* records; successor arrays (when apart) */
    size_t rec_size, succ_size;
} mem;

static int32_t (*preds)[3];
static uint8_t *npred;
static frec **tk;

static uint64_t rng(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#if VEC_OK
__attribute__((target("avx512f")))
#endif
static inline __attribute__((always_inline)) void put(frec *r, int bytes, int how, uint32_t id,
                                                      void *g)
{
#if VEC_OK
    if (how == VEC) {
        __m512i v = _mm512_set_epi64((long long)id | ((long long)id << 32), (long long)g,
                                     (long long)g, 0, (long long)&r->succ1, 1LL << 32, 0, 0);
        _mm512_store_si512((void *)r, v);
        for (int i = 64; i < bytes; i += 64)
            _mm512_store_si512((char *)r + i, _mm512_setzero_si512());
        return;
    }
#endif
    (void)how;
    frec_init(r, (size_t)bytes, id, g);
}

#if VEC_OK
__attribute__((target("avx512f")))
#endif
static inline __attribute__((always_inline)) double build(const mem *m, int bytes, int apart,
                                                          int how, int pf)
{
    fmem rm = { m->rec, m->rec + (apart ? 0 : 16), m->rec + m->rec_size };
    fmem sm = { m->succ, m->succ, m->succ + m->succ_size };
    fmem *em = apart ? &sm : &rm;   /* successor arrays: apart, or in the records' stream */
    double t0 = bench_now_s();
    for (long i = 0; i < N; i++) {
        frec *r = fmem_take(&rm, (size_t)bytes);
        if (pf)
            __builtin_prefetch(rm.cur + 8 * bytes, 1);
        put(r, bytes, how, (uint32_t)i, m->rec);
        tk[i] = r;
        for (int j = 0; j < npred[i]; j++)
            frec_edge(em, tk[preds[i][j]], r);
    }
    return (bench_now_s() - t0) * 1e9 / N;
}

typedef struct variant {
    const char *name;
    int bytes, apart, how, pf;
} variant;

static const variant variants[] = {
    { "96u", 96, 0, SCALAR, 1 },  { "96s", 96, 1, SCALAR, 1 },  { "64u", 64, 0, SCALAR, 1 },
    { "64s", 64, 1, SCALAR, 1 },  { "128s", 128, 1, SCALAR, 1 }, { "64v", 64, 1, VEC, 1 },
    { "128v", 128, 1, VEC, 1 },   { "64vn", 64, 1, VEC, 0 },     { "128vn", 128, 1, VEC, 0 },
};

#if VEC_OK
__attribute__((target("avx512f")))
#endif
static double run(const mem *m, const variant *v)
{
    /* each variant's loop compiled for its constants */
#define CASE(B, A, H, P)                                                                   \
    if (v->bytes == B && v->apart == A && v->how == H && v->pf == P)                       \
        return build(m, B, A, H, P);
    CASE(96, 0, SCALAR, 1) CASE(96, 1, SCALAR, 1) CASE(64, 0, SCALAR, 1)
    CASE(64, 1, SCALAR, 1) CASE(128, 1, SCALAR, 1) CASE(64, 1, VEC, 1)
    CASE(128, 1, VEC, 1) CASE(64, 1, VEC, 0) CASE(128, 1, VEC, 0)
#undef CASE
    return -1;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* size bytes, 2 MiB aligned, touched once; THP asked for (huge) or refused. */
static char *region(size_t size, int huge)
{
    char *p = aligned_alloc((size_t)2 << 20, size);
    if (!p)
        return NULL;
    if (madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
        perror("bench-floor-layout: madvise");
    memset(p, 1, size);
    return p;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1) {
        fprintf(stderr, "usage: bench-floor-layout [ROUNDS >= 1]\n");
        return 2;
    }
    preds = malloc(N * sizeof *preds);
    npred = malloc(N);
    tk = malloc(N * sizeof *tk);
    size_t hp = (size_t)2 << 20;
    size_t rsz = ((size_t)N * 192 + hp - 1) & ~(hp - 1), ssz = ((size_t)N * 64 + hp - 1) & ~(hp - 1);
    mem m[2];
    for (int h = 0; h < 2; h++) {
        m[h].rec = region(rsz, h);
        m[h].succ = region(ssz, h);
        m[h].rec_size = rsz;
        m[h].succ_size = ssz;
        if (!m[h].rec || !m[h].succ) {
            fprintf(stderr, "bench-floor-layout: out of memory\n");
            return 1;
        }
    }
    if (!preds || !npred || !tk) {
        fprintf(stderr, "bench-floor-layout: out of memory\n");
        return 1;
    }
    uint64_t s = 12345;   /* bench-sched's random DAG (make_dag, window 100) */
    for (long i = 0; i < N; i++) {
        long span = i < WINDOW ? i : WINDOW;
        int want = span ? (int)(rng(&s) % 4) : 0;
        npred[i] = 0;
        for (int k = 0; k < want; k++) {
            int32_t p = (int32_t)(i - 1 - (long)(rng(&s) % (uint64_t)span));
            int dup = 0;
            for (int j = 0; j < npred[i]; j++)
                dup |= preds[i][j] == p;
            if (!dup)
                preds[i][npred[i]++] = p;
        }
    }
    int nv = (int)(sizeof variants / sizeof *variants);
#if VEC_OK
    int vec = __builtin_cpu_supports("avx512f");
#else
    int vec = 0;
#endif
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nv; k++) {
            if (variants[k].how == VEC && !vec)
                continue;
            for (int h = 0; h < 2; h++) {
                double x[REPS];
                run(&m[h], &variants[k]);   /* warm-up */
                for (int q = 0; q < REPS; q++)
                    x[q] = run(&m[h], &variants[k]);
                qsort(x, REPS, sizeof *x, cmpd);
                printf("{\"bench\":\"floor_layout\",\"round\":%d,\"variant\":\"%s\",\"huge\":%d,"
                       "\"ns_per_task\":%.2f,\"min\":%.2f,\"max\":%.2f}\n",
                       r, variants[k].name, h, x[REPS / 2], x[0], x[REPS - 1]);
                fflush(stdout);
            }
        }
    return 0;
}
