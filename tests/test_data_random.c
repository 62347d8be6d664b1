/* tests/test_data_random.c: random sequences of tasks over a few data handles, each task
 * on the CPU, a given simulated GPU or anywhere, checked against a sequential replay:
 * every read sees the latest write, with and without eviction. Suite data runs in
 * `meson test --suite unit`, data_stress in `--suite stress`. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cask/cask.h"
#include "data_helpers.h"
#include "test_helpers.h"

TestSuite(data, .fini = leak_check, .timeout = 120);
TestSuite(data_stress, .fini = leak_check, .timeout = 600);

/* ---- simulated GPUs: random sequences, every task anywhere ---- */

#define RS_NDATA 6
#define RS_WORDS 512
#define RS_MAXACC 3
#define RS_MAXTASKS 2000

typedef struct rs_task {
    int nacc;
    int data[RS_MAXACC];
    cask_access_mode mode[RS_MAXACC];
    int where;
} rs_task;
static rs_task rs[RS_MAXTASKS];
static uint64_t rs_seen[RS_MAXTASKS][RS_MAXACC];

/* Every chunk holds one value in all its words; a torn or stale copy shows. */
static cask_status rs_kernel(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id < 0 || id >= RS_MAXTASKS)
        return cask_task_fail(ctx, "bad id");
    const rs_task *t = &rs[id];
    if (t->where >= 0 && cask_task_device(ctx) != t->where)
        return cask_task_fail(ctx, "task %d on device %d, want %d", id,
                              cask_task_device(ctx), t->where);
    if (t->where == ON_CPU && cask_task_device(ctx) != -1)
        return cask_task_fail(ctx, "task %d on device %d, want CPU", id, cask_task_device(ctx));
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *w = cask_task_buffer(ctx, i);
        if (t->mode[i] & CASK_READ) {
            for (int j = 1; j < RS_WORDS; j++)
                if (w[j] != w[0])
                    return cask_task_fail(ctx, "task %d: buffer %d is torn at word %d", id,
                                          i, j);
            rs_seen[id][i] = w[0];
        }
    }
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *w = cask_task_buffer(ctx, i);
        uint64_t v;
        if (t->mode[i] == CASK_WRITE)
            v = mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i);
        else if (t->mode[i] == CASK_RW)
            v = mix(rs_seen[id][i], (uint64_t)id * 16 + (uint64_t)i);
        else
            continue;
        for (int j = 0; j < RS_WORDS; j++)
            w[j] = v;
    }
    return CASK_OK;
}

static void random_sequences_on_sim_gpus(int ncpu, int nsim, size_t mem_limit, int nseeds,
                                         int ntasks)
{
    cask_runtime *rt = start_sim(ncpu, nsim, mem_limit);
    cask_kernel *k = dual_kernel(rt, "rs", rs_kernel);
    static uint64_t host[RS_NDATA][RS_WORDS];
    for (int seed = 1; seed <= nseeds; seed++) {
        uint64_t expect[RS_NDATA];
        cask_data *data[RS_NDATA];
        for (int d = 0; d < RS_NDATA; d++) {
            expect[d] = 1000u * (unsigned)d + (unsigned)seed;
            for (int j = 0; j < RS_WORDS; j++)
                host[d][j] = expect[d];
            cr_assert_eq(cask_data_register(rt, host[d], sizeof host[d], &data[d]), CASK_OK);
        }
        uint64_t s = (uint64_t)seed * 7919;
        cask_graph *g = graph(rt);
        for (int id = 0; id < ntasks; id++) {
            rs_task *t = &rs[id];
            t->nacc = 1 + (int)(rng_next(&s) % RS_MAXACC);
            int used = 0;
            cask_access acc[RS_MAXACC];
            for (int i = 0; i < t->nacc; i++) {
                int d;
                do
                    d = (int)(rng_next(&s) % RS_NDATA);
                while (used & (1 << d));
                used |= 1 << d;
                uint64_t r = rng_next(&s) % 10;
                t->data[i] = d;
                t->mode[i] = r < 5 ? CASK_READ : r < 7 ? CASK_WRITE : CASK_RW;
                acc[i] = (cask_access){ data[d], t->mode[i] };
            }
            int w = (int)(rng_next(&s) % (uint64_t)(nsim + 2));
            t->where = w == nsim ? ON_ANY : w == nsim + 1 ? ON_CPU : w;
            add_on(g, k, t->where, id, acc, t->nacc);
        }
        for (int round = 0; round < 2; round++) {
            compute_ok(g);
            for (int id = 0; id < ntasks; id++) {
                const rs_task *t = &rs[id];
                for (int i = 0; i < t->nacc; i++) {
                    int d = t->data[i];
                    if (t->mode[i] & CASK_READ)
                        cr_assert_eq(rs_seen[id][i], expect[d],
                                     "seed %d round %d task %d read data %d: stale or early",
                                     seed, round, id, d);
                    if (t->mode[i] == CASK_WRITE)
                        expect[d] = mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i);
                    else if (t->mode[i] == CASK_RW)
                        expect[d] = mix(expect[d], (uint64_t)id * 16 + (uint64_t)i);
                }
            }
        }
        cr_assert_eq(cask_graph_destroy(g), CASK_OK);
        for (int d = 0; d < RS_NDATA; d++) {
            cr_assert_eq(cask_data_destroy(data[d]), CASK_OK);
            for (int j = 0; j < RS_WORDS; j++)
                cr_assert_eq(host[d][j], expect[d], "seed %d data %d word %d", seed, d, j);
        }
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, random_sequences_stay_coherent_over_cpu_and_two_simulated_gpus)
{
    random_sequences_on_sim_gpus(2, 2, 0, 20, 300);
}

Test(data, random_sequences_stay_coherent_under_eviction)
{
    /* Room for 4 of the 6 chunks of 4 KiB per GPU; a task uses up to 3. */
    random_sequences_on_sim_gpus(2, 2, 4 * RS_WORDS * sizeof(uint64_t), 10, 300);
}

Test(data_stress, random_sequences_stay_coherent_over_four_simulated_gpus)
{
    random_sequences_on_sim_gpus(4, 4, 4 * RS_WORDS * sizeof(uint64_t), 100, RS_MAXTASKS);
}
