/* kernels/array_cpu_io.c: CPU kernels that move array blocks: rechunk copies, gathers
 * from and scatters to a row-major host array, reads and writes of .npy data. (The
 * matrix product of tiles is array_cpu_matmul.c.) */
/* The tile loops must vectorise whatever the build type (-O2's cheap cost model leaves
 * loops of unknown length scalar); set before the includes so that the inline helpers
 * share the options and inline. No fast-math: results stay those of the C library. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "kernels/array_kernels.h"

/* Calls fn(dst_off, src_off, run) for each contiguous run of the box [lo, hi) (global
 * coordinates) copied between a block at doff of shape dshape and one at soff of shape
 * sshape; offsets in elements. */
typedef void (*run_fn)(void *ud, int64_t doff, int64_t soff, int64_t run);

static void box_runs(int ndim, const int64_t *lo, const int64_t *hi,
                     const int64_t *doff, const int64_t *dshape,
                     const int64_t *soff, const int64_t *sshape, run_fn fn, void *ud)
{
    if (ndim == 0) {
        fn(ud, 0, 0, 1);
        return;
    }
    for (int k = 0; k < ndim; k++)
        if (hi[k] <= lo[k]) return;
    int last = ndim - 1;
    int64_t j[AK_MAX_DIMS];
    for (int k = 0; k < ndim; k++) j[k] = lo[k];
    int64_t run = hi[last] - lo[last];
    for (;;) {
        int64_t d = 0, s = 0;
        for (int k = 0; k < ndim; k++) {
            d = d * dshape[k] + (j[k] - doff[k]);
            s = s * sshape[k] + (j[k] - soff[k]);
        }
        fn(ud, d, s, run);
        int k = last - 1;
        for (; k >= 0; k--) {
            if (++j[k] < hi[k]) break;
            j[k] = lo[k];
        }
        if (k < 0) return;
    }
}

typedef struct mem_copy {
    char *dst;
    const char *src;
    int esize;
} mem_copy;

static void run_memcpy(void *ud, int64_t d, int64_t s, int64_t run)
{
    mem_copy *m = ud;
    memcpy(m->dst + d * m->esize, m->src + s * m->esize, (size_t)(run * m->esize));
}

cask_status ak_cpu_copy(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_copy_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    mem_copy m = {cask_task_buffer(ctx, a->nin), NULL, a->esize};
    for (int i = 0; i < a->nin; i++) {
        int64_t lo[AK_MAX_DIMS], hi[AK_MAX_DIMS];
        for (int k = 0; k < a->ndim; k++) {
            int64_t l1 = a->in_off[i][k], h1 = l1 + a->in_shape[i][k];
            int64_t l2 = a->out_off[k], h2 = l2 + a->out_shape[k];
            lo[k] = l1 > l2 ? l1 : l2;
            hi[k] = h1 < h2 ? h1 : h2;
        }
        m.src = cask_task_buffer(ctx, i);
        box_runs(a->ndim, lo, hi, a->out_off, a->out_shape, a->in_off[i], a->in_shape[i],
                 run_memcpy, &m);
    }
    return CASK_OK;
}

static void block_box(const ak_geom *g, int64_t *lo, int64_t *hi, int64_t *zero)
{
    for (int k = 0; k < g->ndim; k++) {
        lo[k] = g->offset[k];
        hi[k] = g->offset[k] + g->shape[k];
        zero[k] = 0;
    }
}

cask_status ak_cpu_gather(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_host_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    int64_t lo[AK_MAX_DIMS], hi[AK_MAX_DIMS], zero[AK_MAX_DIMS];
    block_box(&a->geom, lo, hi, zero);
    mem_copy m = {cask_task_buffer(ctx, 0), a->src, a->esize};
    box_runs(a->geom.ndim, lo, hi, a->geom.offset, a->geom.shape, zero, a->geom.gshape,
             run_memcpy, &m);
    return CASK_OK;
}

cask_status ak_cpu_scatter(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_host_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    int64_t lo[AK_MAX_DIMS], hi[AK_MAX_DIMS], zero[AK_MAX_DIMS];
    block_box(&a->geom, lo, hi, zero);
    mem_copy m = {a->dst, cask_task_buffer(ctx, 0), a->esize};
    box_runs(a->geom.ndim, lo, hi, zero, a->geom.gshape, a->geom.offset, a->geom.shape,
             run_memcpy, &m);
    return CASK_OK;
}

typedef struct file_io {
    int fd;
    char *buf;
    int64_t base;
    int esize;
    int write;
    int err;
} file_io;

static void run_file(void *ud, int64_t d, int64_t s, int64_t run)
{
    file_io *f = ud;
    if (f->err) return;
    /* reading: d indexes the block, s the file; writing: the other way round */
    int64_t mem = f->write ? s : d, file = f->write ? d : s;
    char *p = f->buf + mem * f->esize;
    size_t left = (size_t)(run * f->esize);
    off_t at = (off_t)(f->base + file * f->esize);
    while (left) {
        ssize_t r = f->write ? pwrite(f->fd, p, left, at) : pread(f->fd, p, left, at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            f->err = r < 0 ? errno : EIO;
            return;
        }
        p += r;
        at += r;
        left -= (size_t)r;
    }
}

static cask_status npy_io(cask_task_ctx *ctx, int write)
{
    size_t asz;
    const ak_host_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    int fd = open(a->path, write ? O_WRONLY : O_RDONLY);
    if (fd < 0) return cask_task_fail(ctx, "cannot open %s: %s", a->path, strerror(errno));
    int64_t lo[AK_MAX_DIMS], hi[AK_MAX_DIMS], zero[AK_MAX_DIMS];
    block_box(&a->geom, lo, hi, zero);
    file_io f = {fd, cask_task_buffer(ctx, 0), a->data_offset, a->esize, write, 0};
    if (write)
        box_runs(a->geom.ndim, lo, hi, zero, a->geom.gshape, a->geom.offset, a->geom.shape,
                 run_file, &f);
    else
        box_runs(a->geom.ndim, lo, hi, a->geom.offset, a->geom.shape, zero, a->geom.gshape,
                 run_file, &f);
    close(fd);
    if (f.err)
        return cask_task_fail(ctx, "%s %s: %s", write ? "writing" : "reading", a->path,
                              f.err == EIO ? "file too short" : strerror(f.err));
    return CASK_OK;
}

cask_status ak_cpu_npy_read(cask_task_ctx *ctx) { return npy_io(ctx, 0); }
cask_status ak_cpu_npy_write(cask_task_ctx *ctx) { return npy_io(ctx, 1); }
