/* tmp_guard.c: removes cask-knn's temporary output file if a signal ends the run
 * (tmp_guard.h). The handler only unlinks a name copied beforehand, then dies of the same
 * signal. */
#include "tmp_guard.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t tmp_armed;
static char tmp_path_copy[4096];

static void on_signal(int sig)
{
    if (tmp_armed)
        unlink(tmp_path_copy);
    signal(sig, SIG_DFL);
    raise(sig);
}

void knn_tmp_arm(const char *tmp_path)
{
    snprintf(tmp_path_copy, sizeof tmp_path_copy, "%s", tmp_path);
    tmp_armed = 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}

void knn_tmp_rename(const char *tmp_path)
{
    if (strcmp(tmp_path, tmp_path_copy))
        snprintf(tmp_path_copy, sizeof tmp_path_copy, "%s", tmp_path);
}

void knn_tmp_disarm(void)
{
    tmp_armed = 0;
}
