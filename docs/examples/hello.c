/* hello.c: a complete cask program: one kernel, two data handles, three tasks whose order
 * cask derives from how they access the data. Build: cc hello.c $(pkg-config --cflags
 * --libs cask). Prints "a = 32 64 96". */
#include <stdio.h>
#include <cask/cask.h>

static cask_status add(cask_task_ctx *ctx)          /* buffer 0 += buffer 1 */
{
    double *x = cask_task_buffer(ctx, 0);
    const double *y = cask_task_buffer(ctx, 1);
    for (size_t i = 0; i < cask_task_buffer_size(ctx, 0) / sizeof *x; i++)
        x[i] += y[i];
    return CASK_OK;
}

static cask_status add_task(cask_graph *g, cask_kernel *k, cask_data *x, cask_data *y)
{
    cask_access acc[2] = { { x, CASK_RW }, { y, CASK_READ } };
    cask_task_desc td = { .kernel = k, .access = acc, .naccess = 2 };
    return cask_graph_add_task(g, &td, NULL);
}

int main(void)
{
    double a[3] = { 1, 2, 3 }, b[3] = { 10, 20, 30 }, *p;
    cask_runtime *rt;
    cask_kernel *k;
    cask_data *da, *db;
    cask_graph *g;
    cask_kernel_desc kd = { .name = "add", .cpu = add };
    cask_status st = cask_init(NULL, &rt);          /* workers on all cores */
    if (!st) st = cask_kernel_register(rt, &kd, &k);
    if (!st) st = cask_data_register(rt, a, sizeof a, &da);
    if (!st) st = cask_data_register(rt, b, sizeof b, &db);
    if (!st) st = cask_graph_create(rt, &g);
    if (!st) st = add_task(g, k, da, db);           /* a += b    a = 11 22 33 */
    if (!st) st = add_task(g, k, db, da);           /* b += a    b = 21 42 63 */
    if (!st) st = add_task(g, k, da, db);           /* a += b    a = 32 64 96 */
    if (!st) st = cask_graph_compute(g);            /* runs them in that order, waits */
    if (!st) st = cask_data_acquire(da, CASK_READ, (void **)&p);
    if (st) {
        fprintf(stderr, "hello: %s\n", cask_status_string(st));
        return 1;
    }
    printf("a = %g %g %g\n", p[0], p[1], p[2]);
    cask_data_release(da);
    cask_graph_destroy(g);
    cask_shutdown(rt);                              /* also frees da and db */
    return 0;
}
