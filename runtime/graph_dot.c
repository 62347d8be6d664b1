/* graph_dot.c: a graph as Graphviz dot, tasks coloured by kernel (as dask.visualize). */
#include <stdio.h>
#include "runtime/graph.h"
#include "runtime/data.h"

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

cask_status cask_graph_dot(const cask_graph *g, FILE *out, int with_data)
{
    static const char *palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                    "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
    if (!g || !out)
        return CASK_ERR_INVALID;
    fprintf(out, "digraph cask {\n  rankdir=TB;\n  node [style=filled, shape=ellipse];\n");
    for (size_t i = 0; i < g->ntasks; i++) {
        const cask_task *t = graph_task(g, i);
        fprintf(out, "  t%zu [label=\"", i);
        put_escaped(out, task_name(t));
        fprintf(out, "\", fillcolor=\"%s\", tooltip=\"", palette[t->kernel->id % 10]);
        put_escaped(out, t->kernel->name);
        fprintf(out, "\"];\n");
    }
    for (size_t i = 0; i < g->ntasks; i++)
        for (int32_t j = 0; j < graph_task(g, i)->nsucc; j++)
            fprintf(out, "  t%zu -> t%u;\n", i, task_succ(graph_task(g, i))[j]->id);
    for (const task_link *l = g->late; l; l = l->next)   /* added while it ran */
        fprintf(out, "  t%u -> t%u;\n", l->pred->id, l->succ->id);
    if (with_data) {
        for (size_t i = 0; i < g->ndatas; i++) {
            fprintf(out, "  d%u [shape=box, fillcolor=\"#ffffff\", label=\"", g->datas[i]->id);
            put_escaped(out, g->datas[i]->name);
            fprintf(out, "\"];\n");
        }
        for (size_t i = 0; i < g->ntasks; i++) {
            const cask_task *t = graph_task(g, i);
            for (int a = 0; a < t->naccess; a++) {
                unsigned did = t->access[a].data->id;
                if (t->access[a].mode & CASK_READ)
                    fprintf(out, "  d%u -> t%zu [style=dashed];\n", did, i);
                if (t->access[a].mode & CASK_WRITE)
                    fprintf(out, "  t%zu -> d%u [style=dashed];\n", i, did);
            }
        }
    }
    fprintf(out, "}\n");
    return ferror(out) ? CASK_ERR_IO : CASK_OK;
}
