/* array/fuse.c: fusion of elementwise operations. Before lowering, each needed node
 * gets a role: ROOT (its chunks are made by tasks and stored), INLINE (computed inside
 * the program of one root, never stored), SHARED (a generator or cast, recomputed inside
 * every program that uses it), ALIAS (a slice: no task), MAT (persisted). A root's
 * program is an accumulator-machine program (kernels/array_kernels.h) built from the
 * inlined expression DAG, with common sub-expressions kept in side registers; a root of
 * an 8-op chain is one task per chunk that reads its input and writes its output once.
 * Reductions are roots whose program computes their input, so e.g. sum(x*x) of a random
 * x reads nothing and writes only partial sums. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

int node_fusible(const cask_array *n)
{
    return !n->mat && (n->kind == NK_GEN || n->kind == NK_UNARY || n->kind == NK_BINARY ||
                       n->kind == NK_SCALAR || n->kind == NK_CAST);
}

static int same_grid(const cask_array *a, const cask_array *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k] || a->chunk[k] != b->chunk[k]) return 0;
    return 1;
}

void fuse_assign_roles(plan *pl)
{
    cask_array_ctx *ctx = pl->ctx;
    for (size_t i = pl->nnodes; i-- > 0;) {
        plan_node *pn = pl->nodes[i];
        cask_array *n = pn->node;
        if (n->mat) {
            pn->role = ROLE_MAT;
            continue;
        }
        if (n->kind == NK_SLICE || n->kind == NK_EXPAND) {
            pn->role = ROLE_ALIAS;
            continue;
        }
        pn->role = ROLE_ROOT;
        pn->g_ops = n->kind == NK_REDUCE ? 0 : 1;
        pn->g_loads = n->kind == NK_REDUCE ? 1 : n->nin;
        if (pn->is_output || !ctx->fuse || !node_fusible(n)) continue;
        int ok = 1, multi = 0;
        cask_array *group = NULL;
        for (int c = 0; c < pn->nconsumers && ok; c++) {
            cask_array *con = pn->consumers[c];
            plan_node *cp = con->pn;
            cask_array *cg = NULL;
            if (con->kind == NK_REDUCE) {
                cg = con;
            } else if (node_fusible(con) && same_grid(con, n)) {
                if (cp->role == ROLE_INLINE) cg = cp->group;
                else if (cp->role == ROLE_ROOT) cg = con;
                else multi = 1;   /* a shared consumer: n is needed in several programs */
            } else {
                ok = 0;
            }
            if (group && cg != group) multi = 1;
            if (cg) group = cg;
        }
        if (!ok) continue;
        if ((multi || !group) && (n->kind == NK_GEN || n->kind == NK_CAST)) {
            /* cheap to recompute: inline into every program that uses it; its input
             * must then be loadable by each (made ROOT or SHARED in its turn) */
            pn->role = ROLE_SHARED;
            continue;
        }
        if (multi || !group) continue;
        plan_node *gp = group->pn;
        if (gp->g_ops + 1 > AK_MAX_OPS - 8 || gp->g_loads + n->nin > AK_MAX_IN) {
            if (n->kind == NK_GEN || n->kind == NK_CAST) pn->role = ROLE_SHARED;
            continue;
        }
        pn->role = ROLE_INLINE;
        pn->group = group;
        gp->g_ops++;
        gp->g_loads += n->nin;
    }
}

/* ---- program building ---- */

typedef struct pb_entry {
    cask_array *n;
    int uses;
    int side;        /* side register holding its value, -1 none */
    int visited;
} pb_entry;

typedef struct pbuild {
    plan *pl;
    cask_array *root;
    prog_cache *pc;
    ak_prog *p;
    pb_entry e[2 * AK_MAX_OPS];
    int ne;
    int side_used[AK_MAX_SIDE];
    int computed;
    int fail;
} pbuild;

static int in_prog(const pbuild *b, const cask_array *x)
{
    if (x->mat || !x->pn) return 0;
    if (x == b->root) return x->kind != NK_REDUCE;
    if (x->pn->role == ROLE_SHARED) return 1;
    return x->pn->role == ROLE_INLINE && x->pn->group == b->root;
}

static pb_entry *entry(pbuild *b, cask_array *x)
{
    for (int i = 0; i < b->ne; i++)
        if (b->e[i].n == x) return &b->e[i];
    if (b->ne == (int)(sizeof b->e / sizeof b->e[0])) {
        b->fail = 1;
        return NULL;
    }
    pb_entry *e = &b->e[b->ne++];
    e->n = x;
    e->uses = 0;
    e->side = -1;
    e->visited = 0;
    return e;
}

static void count_uses(pbuild *b, cask_array *x)
{
    pb_entry *e = entry(b, x);
    if (!e) return;
    e->uses++;
    if (e->visited || !in_prog(b, x)) return;
    e->visited = 1;
    for (int i = 0; i < x->nin && !b->fail; i++) count_uses(b, x->in[i]);
}

static ak_instr *emit(pbuild *b, int op, int dt)
{
    if (b->p->nops >= AK_MAX_OPS) {
        b->fail = 1;
        return NULL;
    }
    ak_instr *ins = &b->p->ops[b->p->nops++];
    memset(ins, 0, sizeof *ins);
    ins->op = (uint8_t)op;
    ins->dt = (uint8_t)dt;
    return ins;
}

static int input_slot(pbuild *b, cask_array *x)
{
    prog_cache *pc = b->pc;
    for (int i = 0; i < pc->next; i++)
        if (pc->ext[i] == x) return i;
    if (pc->next == AK_MAX_IN) {
        b->fail = 1;
        return 0;
    }
    pc->ext[pc->next] = x;
    b->p->in_dt[pc->next] = x->dtype;
    return pc->next++;
}

static int side_alloc(pbuild *b)
{
    for (int k = 0; k < AK_MAX_SIDE; k++)
        if (!b->side_used[k]) {
            b->side_used[k] = 1;
            return k;
        }
    b->fail = 1;
    return 0;
}

/* Whether x can be an operand without computing it into acc, and sets the operand. */
static int operand(pbuild *b, cask_array *x, ak_instr *ins)
{
    pb_entry *e = entry(b, x);
    if (!e) return 0;
    if (e->side >= 0) {
        if (ins) ins->okind = AK_OPND_SIDE, ins->oidx = (uint8_t)e->side;
        return 1;
    }
    if (!in_prog(b, x)) {
        if (ins) ins->okind = AK_OPND_INPUT, ins->oidx = (uint8_t)input_slot(b, x);
        return 1;
    }
    if (x->kind == NK_GEN && x->op == AK_OP_SET) {
        if (ins) ins->okind = AK_OPND_IMM, ins->imm[0] = x->p.imm[0];
        return 1;
    }
    return 0;
}

static void eval(pbuild *b, cask_array *x);

static void eval_binary(pbuild *b, cask_array *x)
{
    cask_array *l = x->in[0], *r = x->in[1];
    ak_instr *ins;
    if (operand(b, r, NULL)) {
        eval(b, l);
        if ((ins = emit(b, x->op, x->dtype))) operand(b, r, ins);
    } else if (operand(b, l, NULL)) {
        eval(b, r);
        if ((ins = emit(b, x->op, x->dtype))) {
            operand(b, l, ins);
            ins->rev = 1;
        }
    } else {
        eval(b, r);
        if (operand(b, r, NULL)) {   /* r went to a side register: it is used again */
            eval(b, l);
            if ((ins = emit(b, x->op, x->dtype))) operand(b, r, ins);
            return;
        }
        int k = side_alloc(b);
        if ((ins = emit(b, AK_OP_PUT, r->dtype))) ins->oidx = (uint8_t)k;
        eval(b, l);
        if ((ins = emit(b, x->op, x->dtype))) ins->okind = AK_OPND_SIDE, ins->oidx = (uint8_t)k;
        b->side_used[k] = 0;
    }
}

static void eval(pbuild *b, cask_array *x)
{
    if (b->fail) return;
    pb_entry *e = entry(b, x);
    if (!e) return;
    ak_instr *ins;
    if (e->side >= 0 || !in_prog(b, x)) {
        if ((ins = emit(b, AK_OP_SET, x->dtype))) operand(b, x, ins);
        return;
    }
    switch (x->kind) {
    case NK_GEN:
        if ((ins = emit(b, x->op, x->dtype))) {
            if (x->op == AK_OP_SET) {
                ins->okind = AK_OPND_IMM;
                ins->imm[0] = x->p.imm[0];
            } else {
                memcpy(ins->imm, x->p.imm, sizeof ins->imm);
                b->p->needs_gidx = 1;
            }
        }
        break;
    case NK_UNARY:
        eval(b, x->in[0]);
        emit(b, x->op, x->dtype);
        break;
    case NK_CAST:
        eval(b, x->in[0]);
        if ((ins = emit(b, AK_OP_CAST, x->dtype))) ins->src_dt = (uint8_t)x->in[0]->dtype;
        break;
    case NK_SCALAR:
        eval(b, x->in[0]);
        if ((ins = emit(b, x->op, x->dtype))) {
            ins->okind = AK_OPND_IMM;
            ins->imm[0] = x->p.imm[0];
            ins->rev = (uint8_t)x->p.scalar_first;
        }
        break;
    case NK_BINARY:
        eval_binary(b, x);
        break;
    default:
        b->fail = 1;
        return;
    }
    b->computed++;
    e = entry(b, x);   /* the table may not move, but be safe */
    if (e && e->uses > 1 && !b->fail) {
        int k = side_alloc(b);
        if ((ins = emit(b, AK_OP_PUT, x->dtype))) ins->oidx = (uint8_t)k;
        e->side = k;
    }
}

int fuse_build_prog(plan *pl, cask_array *root, cask_array *expr, prog_cache *pc)
{
    pbuild *b = calloc(1, sizeof *b);
    if (!b) return -1;
    memset(pc, 0, sizeof *pc);
    b->pl = pl;
    b->root = root;
    b->pc = pc;
    b->p = &pc->prog;
    count_uses(b, expr);
    eval(b, expr);
    int fail = b->fail;
    if (!fail) {
        pc->prog.nin = pc->next;
        pc->prog.out_dt = expr->dtype;
        pc->nops_nodes = b->computed;
        pc->state = 1;
    } else {
        pc->state = -1;
    }
    free(b);
    return fail ? -1 : 0;
}

/* Makes the members of root's group (or, with shared, the shared nodes too) roots of
 * their own, after a program did not fit. */
static void demote(plan *pl, cask_array *root, int shared)
{
    for (size_t i = 0; i < pl->nnodes; i++) {
        plan_node *pn = pl->nodes[i];
        if ((pn->role == ROLE_INLINE && pn->group == root) ||
            (shared && pn->role == ROLE_SHARED)) {
            pn->role = ROLE_ROOT;
            pn->group = NULL;
        }
    }
}

/* The program of root (computing expr), built once per plan. */
cask_status fuse_root_prog(plan *pl, cask_array *root, cask_array *expr, prog_cache **out)
{
    plan_node *pn = root->pn;
    if (!pn->pc) {
        pn->pc = calloc(1, sizeof *pn->pc);
        if (!pn->pc) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    }
    if (pn->pc->state == 0) {
        if (fuse_build_prog(pl, root, expr, pn->pc)) {
            demote(pl, root, 0);
            if (fuse_build_prog(pl, root, expr, pn->pc)) {
                demote(pl, root, 1);
                if (fuse_build_prog(pl, root, expr, pn->pc))
                    return arr_error(pl->ctx, CASK_ERR_INTERNAL,
                                     "an operation does not fit in a program");
            }
        }
    }
    *out = pn->pc;
    return CASK_OK;
}

void fuse_input_layout(const cask_array *out, const int64_t *oidx, const cask_array *x,
                       int64_t *xidx, int64_t *stride, uint8_t *contig)
{
    int lead = out->ndim - x->ndim;
    for (int k = 0; k < x->ndim; k++)
        xidx[k] = (x->shape[k] == 1) ? 0 : oidx[k + lead];
    ak_geom xg, og;
    chunk_geom(x, xidx, &xg);
    chunk_geom(out, oidx, &og);
    int64_t xst[MAXD], ost[MAXD], s = 1, t = 1;
    for (int k = x->ndim - 1; k >= 0; k--) {
        xst[k] = s;
        s *= xg.shape[k];
    }
    for (int a = out->ndim - 1; a >= 0; a--) {
        ost[a] = t;
        t *= og.shape[a];
    }
    int same = xg.n == og.n;
    for (int a = 0; a < out->ndim; a++) {
        int k = a - lead;
        if (k < 0 || (x->shape[k] == 1 && out->shape[a] != 1)) stride[a] = 0;
        else stride[a] = xst[k];
        if (og.shape[a] > 1 && stride[a] != ost[a]) same = 0;
    }
    *contig = (uint8_t)same;
}

cask_status fuse_chunk_args(plan *pl, cask_array *out, const int64_t *idx, prog_cache *pc,
                            ak_fused_args *a, cask_access *acc)
{
    memset(a, 0, sizeof *a);
    a->prog = pc->prog;
    chunk_geom(out, idx, &a->geom);
    for (int i = 0; i < pc->prog.nin; i++) {
        int64_t xi[MAXD];
        fuse_input_layout(out, idx, pc->ext[i], xi, a->in_stride[i], &a->in_contig[i]);
        cask_status st = plan_chunk_idx(pl, pc->ext[i], xi, &acc[i].data);
        if (st) return st;
        acc[i].mode = CASK_READ;
        if (!a->in_contig[i]) a->need_index = 1;
    }
    if (pc->prog.needs_gidx) a->need_index = 1;
    return CASK_OK;
}

cask_status fuse_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    prog_cache *pc;
    cask_status st = fuse_root_prog(pl, n, n, &pc);
    if (st) return st;
    ak_fused_args *a = malloc(sizeof *a);
    if (!a) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    cask_access acc[AK_MAX_IN + 1];
    if ((st = fuse_chunk_args(pl, n, idx, pc, a, acc))) goto out;
#ifdef CASK_HAVE_CUDA
    if (pl->ctx->jit && pl->ctx->use_jit && pl->ctx->where != CASK_WHERE_CPU)
        a->jit = ak_jit_kernel(pl->ctx->jit, &pc->prog, a->need_index);
#endif
    if ((st = plan_out_handle(pl, n, idx, out))) goto out;
    acc[pc->prog.nin].data = *out;
    acc[pc->prog.nin].mode = CASK_WRITE;
    char name[48];
    snprintf(name, sizeof name, "array.fused[%d]", pc->nops_nodes);
    /* a generator spreads over the GPUs by chunk position, the rest follow their data */
    int hint = pc->prog.nin == 0 ? (int)(chunk_linear(n, idx) * pl->ctx->ngpus /
                                         (n->nchunks ? n->nchunks : 1))
                                 : -1;
    st = plan_task(pl, pl->ctx->k.fused, acc, pc->prog.nin + 1, a, sizeof *a, name, 1, hint);
    if (!st && pc->nops_nodes >= 2) {
        pl->st.ntasks_fused++;
        pl->st.nops_fused += (size_t)pc->nops_nodes;
    }
out:
    free(a);
    return st;
}
