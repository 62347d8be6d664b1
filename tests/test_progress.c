/* test_progress.c: the progress bar of cask_graph_wait: drawn on stderr when asked for
 * (or when stderr is a terminal) once a wait passes a second; silent otherwise. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cask/cask.h"

static cask_status nap(cask_task_ctx *ctx)
{
    usleep(1000);
    return CASK_OK;
}

/* Runs 2000 naps of 1 ms on 2 workers (about 1.2 s) with the given progress setting. */
static void run(int progress)
{
    /* errors only: a warning about the machine (a container hiding /sys) is not the
     * progress bar's output */
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_PROGRESS |
                                      CASK_CONFIG_LOG_LEVEL,
                        .ncpu = 2, .ngpu = 0, .progress = progress, .log_level = CASK_LOG_ERROR };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "nap", .cpu = nap };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_task_desc td = { .kernel = k };
    for (int i = 0; i < 2000; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    fflush(stderr);
}

Test(progress, drawn_when_asked_for, .init = cr_redirect_stderr)
{
    run(1);
    FILE *f = cr_get_redirected_stderr();
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    cr_assert(strstr(buf, "[cask] [") && strstr(buf, "/2000 tasks"), "stderr: %s", buf);
}

Test(progress, silent_when_stderr_is_not_a_terminal, .init = cr_redirect_stderr)
{
    run(-1);
    cr_assert_stderr_eq_str("");
}

Test(progress, silent_when_switched_off, .init = cr_redirect_stderr)
{
    run(0);
    cr_assert_stderr_eq_str("");
}
