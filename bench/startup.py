#!/usr/bin/env python3
"""bench/startup.py: start-up plus shutdown of a cask job on one host, against one process.

Launches bench-startup (bench/startup.c: cask_init, cask_dist_init, one barrier,
cask_dist_finalize, cask_shutdown) as a job of N ranks, for each N given, ROUNDS times,
with CASK_STATS=1 so that every rank prints its phases (runtime/phases.h). The variants
(--variant NAME:K=V,K=V; BUILD=DIR runs another build's bench-startup) run alternated
within each round, so that their figures are taken back to back. Prints a table of medians over the rounds and one JSON line per
(variant, ranks) on stdout (also appended to --json FILE).

  python3 bench/startup.py [--build build] [--np 1,2,4,8,16,32] [--rounds 5]
                           [--launcher local|mpirun] [--threads 1] [--cpu-only]
                           [--variant NAME:K=V,...]... [--json FILE]

Figures (ms), each the median over the rounds of the figure of one run:
  wall      the job, from the first rank's start to the last one's exit (as the launcher
            sees it; with the local launcher, forks included)
  over1     wall minus the wall of one process running the same program without a job
            (N = 1 is run without a launcher)
  dist      the slowest rank's cask_dist_init + first barrier + cask_dist_finalize: what
            joining and leaving the job (bootstrap, UCX, liveness) costs the job. This is
            the "start-up plus shutdown" of docs/distributed.md
  join, barrier, leave   the slowest rank's share of each
  load      median over the ranks of exec to cask_init (libraries loaded, constructors)
  init      median over the ranks of cask_init
  cpu       median over the ranks of the process's CPU time (user + system) up to the
            end of main(): what a rank costs the host, less sensitive to other load
  then the slowest rank's phases of the join and the leave (runtime/phases.h)
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = ["boot", "ucx-context", "ucx-worker", "addresses", "wire-up", "hello", "nccl",
          "routes", "graphs", "goodbye", "endpoints", "ucx-teardown", "boot-barrier"]
SHOWN = ["ucx-context", "ucx-worker", "addresses", "wire-up", "hello", "goodbye",
         "endpoints", "ucx-teardown", "boot-barrier"]


def run_job(prog, np_, launcher, threads, cpu_only, env_extra, timeout):
    env = dict(os.environ)
    env.update(env_extra)
    if "BUILD" in env_extra:   # a variant's own build (before/after a change)
        prog = os.path.join(env.pop("BUILD"), "bench", "bench-startup")
    env["CASK_STATS"] = "1"
    args = [prog, "--threads", str(threads)] + (["--cpu-only"] if cpu_only else [])
    procs = []
    boot = None
    t0 = time.monotonic()
    if np_ == 1:
        procs.append(subprocess.Popen(args + ["--no-dist"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    elif launcher == "mpirun":
        cmd = ["mpirun", "-n", str(np_), "--oversubscribe", "--allow-run-as-root",
               "--bind-to", "none"] + args
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    else:
        boot = tempfile.mkdtemp(prefix="cask-boot.")
        for r in range(np_):
            e = dict(env, CASK_BOOT_DIR=boot, CASK_RANK=str(r), CASK_SIZE=str(np_),
                     CASK_LOCAL_RANK=str(r), CASK_LOCAL_SIZE=str(np_))
            procs.append(subprocess.Popen(args, env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    outs, errs, rc = [], [], 0
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            rc = rc or 124
        outs.append(o)
        errs.append(e)
        rc = rc or p.returncode
    wall = (time.monotonic() - t0) * 1e3
    if boot:
        shutil.rmtree(boot, ignore_errors=True)
    ranks = [json.loads(l) for o in outs for l in o.splitlines() if l.startswith("{")]
    phases = []
    for e in errs:
        for l in e.splitlines():
            m = re.search(r"phases \(ms\): (.*)", l)
            if m:
                toks = m.group(1).replace("|", " ").split()
                phases.append({toks[i]: float(toks[i + 1]) for i in range(0, len(toks) - 1, 2)})
    if rc or len(ranks) != np_:
        sys.stderr.write("".join(errs)[-3000:])
        raise SystemExit("bench/startup.py: %d ranks: exit %d, %d of %d reported"
                         % (np_, rc, len(ranks), np_))
    fig = {"wall": wall,
           "dist": max(r["join_ms"] + r["barrier_ms"] + r["leave_ms"] for r in ranks),
           "join": max(r["join_ms"] for r in ranks),
           "barrier": max(r["barrier_ms"] for r in ranks),
           "leave": max(r["leave_ms"] for r in ranks),
           "load": statistics.median(r["exec_ms"] for r in ranks),
           "init": statistics.median(r["init_ms"] for r in ranks),
           "cpu": statistics.median(r.get("cpu_ms", 0.0) for r in ranks)}
    for ph in PHASES:
        fig[ph] = max((p.get(ph, 0.0) for p in phases), default=0.0)
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", default="1,2,4,8,16,32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--launcher", choices=["local", "mpirun"], default="local")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu-only", action="store_true", help="no GPU opened (bench-startup --cpu-only)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:K=V,K=V (environment of every rank; BUILD=DIR: that build's "
                         "bench-startup); default: one, 'default'")
    ap.add_argument("--json", default="")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    prog = os.path.join(a.build, "bench", "bench-startup")
    nps = [int(x) for x in a.np.split(",")]
    if 1 not in nps:
        nps = [1] + nps
    variants = []
    for v in a.variant or ["default:"]:
        name, _, kv = v.partition(":")
        env = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
        variants.append((name, env))
    figs = {}
    for r in range(a.rounds):
        for np_ in nps:
            for name, env in variants:
                figs.setdefault((name, np_), []).append(
                    run_job(prog, np_, a.launcher, a.threads, a.cpu_only, env, a.timeout))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = -1
    print("# %s, %d cores, load %.1f, launcher %s, %d thread(s) a rank%s, median of %d rounds, ms"
          % (os.uname().nodename, os.cpu_count(), load, a.launcher, a.threads,
             ", --cpu-only" if a.cpu_only else "", a.rounds))
    cols = ["wall", "over1", "dist", "join", "barrier", "leave", "load", "init", "cpu"] + SHOWN
    print("%-10s %5s " % ("variant", "ranks") + " ".join("%8s" % c[:8] for c in cols))
    out = open(a.json, "a") if a.json else None
    for name, _ in variants:
        base = statistics.median(f["wall"] for f in figs[(name, 1)])
        for np_ in nps:
            fs = figs[(name, np_)]
            med = {k: statistics.median(f[k] for f in fs) for k in fs[0]}
            med["over1"] = med["wall"] - base
            print("%-10s %5d " % (name, np_) + " ".join("%8.1f" % med[c] for c in cols))
            line = json.dumps({"bench": "startup", "variant": name, "ranks": np_,
                               "launcher": a.launcher, "threads": a.threads,
                               "cpu_only": a.cpu_only,
                               "rounds": a.rounds, "load": round(load, 1),
                               **{k: round(v, 2) for k, v in med.items()}})
            print(line)
            if out:
                out.write(line + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
