/* tests/dist/chaos_gen.c: random distributed graphs from a seed, their kernel and their
 * sequential replay (see chaos_gen.h). The shapes aimed at: owners anywhere (or all on
 * one rank), chunks from 8 bytes to 512 KiB (both sides of UCX's rendezvous threshold),
 * fan-in up to 4 reads, fan-out through a few hot data that many tasks read, chains of
 * RW tasks on one datum, tasks writing two data, gathers to any rank including the
 * datum's own owner, and graphs computed up to three times. */
#include "chaos_gen.h"

#include <string.h>

static uint64_t mix64(uint64_t x)   /* splitmix64's finaliser */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}

/* uniform in [lo, hi] */
static int pick(rng *r, int lo, int hi)
{
    return lo + (int)(next(r) % (uint64_t)(hi - lo + 1));
}

static int chance(rng *r, int percent)
{
    return (int)(next(r) % 100) < percent;
}

uint64_t cg_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void cg_apply(const cg_task *t, uint64_t *const *buf, const size_t *len)
{
    for (int w = 0; w < t->nw; w++) {
        uint64_t *o = buf[w];
        for (size_t i = 0; i < len[w]; i++) {
            uint64_t x = t->mode[w] == CG_RW ? mix64(o[i] ^ t->salt)
                                             : mix64(t->salt + 0x632be59bd9b4e019ull * (uint64_t)(w + 1) + i);
            for (int j = t->nw; j < t->nacc; j++)
                x = mix64(x ^ (buf[j][i % len[j]] + (uint64_t)j));
            for (uint32_t r = 1; r < t->rounds; r++)
                x = mix64(x + r);
            o[i] = x;
        }
    }
}

void cg_initial(const cg_spec *s, uint32_t gid, uint64_t *out)
{
    uint64_t base = mix64(s->seed ^ (0xa0761d6478bd642full * (gid + 1)));
    for (size_t i = 0; i < s->len[gid]; i++)
        out[i] = mix64(base + i);
}

void cg_replay_compute(const cg_spec *s, int g, uint64_t **state)
{
    const cg_graph *gr = &s->graph[g];
    for (int k = 0; k < gr->ntasks; k++) {
        const cg_task *t = &gr->task[k];
        uint64_t *buf[CG_MAXACC];
        size_t len[CG_MAXACC];
        for (int i = 0; i < t->nacc; i++) {
            buf[i] = state[t->gid[i]];
            len[i] = s->len[t->gid[i]];
        }
        cg_apply(t, buf, len);
    }
}

static size_t pick_len(rng *r)
{
    int c = pick(r, 0, 99);
    if (c < 20)
        return (size_t)pick(r, 1, 16);            /* a few words */
    if (c < 55)
        return (size_t)pick(r, 64, 2048);         /* eager messages */
    if (c < 90)
        return (size_t)pick(r, 2048, 16384);      /* 16 to 128 KiB: rendezvous */
    return (size_t)pick(r, 16384, 65536);         /* up to 512 KiB */
}

static int has(const cg_task *t, uint32_t gid)
{
    for (int i = 0; i < t->nacc; i++)
        if (t->gid[i] == gid)
            return 1;
    return 0;
}

/* In a reproducible graph, a generator (W only, no reads) before the first use of gid. */
static void ensure_written(const cg_spec *s, cg_graph *g, int *written, uint32_t gid, rng *r)
{
    if (!s->reproducible || written[gid] || g->ntasks >= CG_MAXTASKS)
        return;
    cg_task *t = &g->task[g->ntasks++];
    memset(t, 0, sizeof *t);
    t->nacc = t->nw = 1;
    t->gid[0] = gid;
    t->mode[0] = CG_W;
    t->salt = next(r);
    t->rounds = (uint32_t)pick(r, 1, 4);
    written[gid] = 1;
}

static void gen_graph(cg_spec *s, cg_graph *g, rng *r)
{
    memset(g, 0, sizeof *g);
    int written[CG_MAXDATA] = { 0 };
    uint32_t hot[3];
    for (int i = 0; i < 3; i++)
        hot[i] = (uint32_t)pick(r, 0, s->ndata - 1);
    int want = pick(r, 3, 36);
    /* a task needs at most 1 + 6 slots (itself, a generator per access) */
    for (int k = 0; k < want && g->ntasks + 1 + CG_MAXACC <= CG_MAXTASKS; k++) {
        cg_task t;
        memset(&t, 0, sizeof t);
        t.nw = chance(r, 85) ? 1 : 2;
        int nr = pick(r, 0, 99);
        nr = nr < 15 ? 0 : nr < 50 ? 1 : nr < 75 ? 2 : nr < 90 ? 3 : 4;
        if (t.nw + nr > s->ndata)
            nr = s->ndata - t.nw;
        if (nr < 0) {
            t.nw = s->ndata;
            nr = 0;
        }
        while (t.nacc < t.nw) {
            uint32_t gid = (uint32_t)pick(r, 0, s->ndata - 1);
            if (has(&t, gid))
                continue;
            t.gid[t.nacc] = gid;
            t.mode[t.nacc++] = chance(r, 35) ? CG_W : CG_RW;
        }
        for (int tries = 0; t.nacc < t.nw + nr && tries < 64; tries++) {
            uint32_t gid = chance(r, 60) ? hot[pick(r, 0, 2)] : (uint32_t)pick(r, 0, s->ndata - 1);
            if (has(&t, gid))
                continue;
            t.gid[t.nacc] = gid;
            t.mode[t.nacc++] = CG_R;
        }
        t.salt = next(r);
        t.rounds = chance(r, 10) ? (uint32_t)pick(r, 50, 200) : (uint32_t)pick(r, 1, 8);
        t.nap_us = chance(r, 50) ? (uint32_t)pick(r, 1000, 40000) : 0;
        for (int i = 0; i < t.nacc; i++)
            if (t.mode[i] != CG_W)
                ensure_written(s, g, written, t.gid[i], r);
        for (int i = 0; i < t.nw; i++)
            written[t.gid[i]] = 1;
        g->task[g->ntasks++] = t;
    }
    int ng = pick(r, 0, CG_MAXGATHERS < s->ndata ? CG_MAXGATHERS : s->ndata);
    for (int tries = 0; g->ngathers < ng && tries < 64; tries++) {
        uint32_t gid = (uint32_t)pick(r, 0, s->ndata - 1);
        int dup = 0;
        for (int i = 0; i < g->ngathers; i++)
            dup |= g->gather_gid[i] == gid;
        if (dup)
            continue;
        if (s->reproducible && !written[gid])
            continue;   /* its content would be the owner's memory */
        g->gather_gid[g->ngathers] = gid;
        g->gather_root[g->ngathers++] = chance(r, 30) ? s->owner[gid] : pick(r, 0, s->nranks - 1);
    }
    g->ncomputes = pick(r, 1, CG_MAXCOMPUTES);
}

void cg_settings(uint64_t seed, int *ncpu, int *steal)
{
    rng r = { seed ^ 0x5851f42d4c957f2dull };
    *ncpu = pick(&r, 1, 2);
    *steal = chance(&r, 70);
}

void cg_generate(cg_spec *s, uint64_t seed, int nranks)
{
    memset(s, 0, sizeof *s);
    rng r = { seed * 0x2545f4914f6cdd1dull + 12345 };
    s->seed = seed;
    s->nranks = nranks;
    s->ndata = pick(&r, 3, CG_MAXDATA);
    int one_owner = chance(&r, 15) ? pick(&r, 0, nranks - 1) : -1;
    for (int i = 0; i < s->ndata; i++) {
        s->len[i] = pick_len(&r);
        s->owner[i] = one_owner >= 0 ? one_owner : pick(&r, 0, nranks - 1);
    }
    cg_settings(seed, &s->ncpu, &s->steal);
    s->barrier = chance(&r, 30);
    s->reproducible = chance(&r, 40);
    s->ngraphs = chance(&r, 75) ? 1 : 2;
    for (int g = 0; g < s->ngraphs; g++)
        gen_graph(s, &s->graph[g], &r);
}

void cg_describe(const cg_spec *s, FILE *f)
{
    size_t bytes = 0;
    int tasks = 0, computes = 0, gathers = 0, edges = 0;
    for (int i = 0; i < s->ndata; i++)
        bytes += s->len[i] * sizeof(uint64_t);
    for (int g = 0; g < s->ngraphs; g++) {
        tasks += s->graph[g].ntasks;
        computes += s->graph[g].ncomputes;
        gathers += s->graph[g].ngathers;
        for (int k = 0; k < s->graph[g].ntasks; k++)
            edges += s->graph[g].task[k].nacc;
    }
    fprintf(f, "seed %llu on %d ranks: %d data (%zu bytes), %d graph(s), %d tasks, %d accesses, "
            "%d gathers, %d computes, %d cpu/rank, steal %d, barrier %d, reproducible %d\n",
            (unsigned long long)s->seed, s->nranks, s->ndata, bytes, s->ngraphs, tasks, edges,
            gathers, computes, s->ncpu, s->steal, s->barrier, s->reproducible);
}
