#!/usr/bin/env python3
"""bench/python_bench.py: cask from Python against its peers, in one run.

  python3 bench/python_bench.py --build build [--figs chain,matmul,knn,dask,...]
      [--chain-mb 256] [--chunk-mb 16] [--mm 2048] [--mm-chunk 512] [--knn 2^20,2^14]
      [--dask-tasks 100000] [--reps 5] [--smoke]

Figures (each a median of --reps after a warm-up; the peers run in the same process
or right after, so a neighbour's load hits both alike):
  chain   (CPU workers, as bench-array-cpu) the 8-op float32 chain of bench-array-cpu (x*1.5, sin, +0.25, square, *0.5,
          sqrt, +1, exp; persisted) through cask.array, through the C API
          (bench-array-cpu --only chain) and through dask.array (threaded, persist)
  matmul  (CPU workers) an n x n float32 product by tiles: cask.array, C API, dask.array
  knn     (the GPUs there are) cask.knn against the cask-knn program on the same .npy files (same answers
          checked; cask-knn's time is its process's wall time, loading included)
  knnc    (CPU workers) cask.knn k=1 against cask-knn --cpu-only's own compute time
  gpuchain (GPUs, CuPy) the chain on a CuPy array through DLPack, result left on the GPU,
          with the run's host<->GPU byte counters; CuPy's ufuncs as the peer
  knncupy (GPUs, CuPy) cask.knn on CuPy inputs against cask-knn's compute time
  dask    the Dask bridge: cask.dask.get against Dask's threaded scheduler (same
          cores) on a dask.array graph of about --dask-tasks small tasks (unoptimised:
          ones, +1, a tree of sums), the same graph for both; per-task overhead =
          (scheduler time - the same tasks run one after the other in this thread) /
          tasks
Prints one JSON line per measurement ({"bench":"python",...}) and a table.
With --build, a build tree's package is used (staged as the suite python stages it)
when `import cask` fails; cask's C programs come from there too.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time


def stage(build):
    """Makes `import cask` use the build tree's extension (re-executes this script)."""
    ext = glob.glob(os.path.join(build, "python", "_cask*.so"))
    if not ext:
        sys.exit(f"python_bench: no {build}/python/_cask*.so: build first (ninja -C {build})")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "cask")
    staged = os.path.join(build, "python", "staged-bench")
    pkg = os.path.join(staged, "cask")
    os.makedirs(pkg, exist_ok=True)
    for f in glob.glob(os.path.join(src, "*")) + ext:
        dst = os.path.join(pkg, os.path.basename(f))
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.path.abspath(f), dst)
    # staged first, then what the caller had there (python_device.sh's Dask in /tmp/site)
    path = os.pathsep.join(p for p in (staged, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, CASK_BENCH_STAGED="1",
               LD_LIBRARY_PATH=os.path.abspath(build) + os.pathsep +
               os.environ.get("LD_LIBRARY_PATH", ""))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def timeit(fn, reps, warm=True):
    if warm:
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return median(t), min(t), max(t)


ROWS = []


def emit(fig, impl, size, stats, extra=None):
    med, lo, hi = stats
    rec = {"bench": "python", "fig": fig, "impl": impl, "size": size,
           "median_s": round(med, 6), "min_s": round(lo, 6), "max_s": round(hi, 6)}
    rec.update(extra or {})
    print(json.dumps(rec), flush=True)
    ROWS.append(rec)


def c_bench(build, args):
    exe = os.path.join(build, "bench", "bench-array-cpu")
    if not os.path.exists(exe):
        print(f"python_bench: {exe} missing: C API figures skipped", file=sys.stderr)
        return []
    out = subprocess.run([exe] + args, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def chain8(x, np):
    f = np.float32
    return np.exp(np.sqrt(np.square(np.sin(x * f(1.5)) + f(0.25)) * f(0.5)) + f(1.0))


def no_dask_why(e):
    """The ImportError's own text (dask.array re-raises it with install advice after a
    blank line: left out), the module it names and where it was raised."""
    import traceback
    orig = e.__cause__ if isinstance(e.__cause__, ImportError) else e
    text = str(orig).split("\n\n")[0].strip()
    where = traceback.extract_tb(orig.__traceback__)[-1:] if orig.__traceback__ else []
    return (f"{type(orig).__name__}: {text}" + (f" [module {orig.name}]" if orig.name else "")
            + "".join(f" [at {f.filename}:{f.lineno}]" for f in where))


def cpu_workers_only(on):
    """Restarts the runtime with GPUs off (as bench-array-cpu runs) or as the
    environment says (cask.knn against cask-knn, which use the GPUs they find)."""
    import cask
    cask.shutdown()
    cask.config.set(ngpu=0 if on else None)


def fig_chain(a, np):
    import cask.array as ca
    cpu_workers_only(True)
    n, chunk = a.chain_mb << 18, a.chunk_mb << 18
    size = f"{a.chain_mb}MiB/{a.chunk_mb}"
    x = ca.random.uniform(size=n, chunks=chunk, seed=1, dtype=np.float32).persist()
    emit("chain", "cask.array", size, timeit(lambda: chain8(x, np).persist(), a.reps),
         {"gbps": None})
    for r in c_bench(a.build, ["--only", "chain", "--chain-mb", str(a.chain_mb),
                               "--chunk-mb", str(a.chunk_mb), "--reps", str(a.reps)]):
        if r.get("variant") == "fused":
            emit("chain", "C API", size, (r["median_s"], r["min_s"], r["max_s"]))
    try:
        import dask
        import dask.array as da
    except ImportError as e:
        print(f"python_bench: no dask: dask.array peer skipped ({no_dask_why(e)})",
              file=sys.stderr)
        return
    xn = x.compute()
    xd = da.from_array(xn, chunks=chunk).persist(scheduler="threads")
    emit("chain", "dask.array", size,
         timeit(lambda: chain8(xd, np).persist(scheduler="threads"), a.reps))


def fig_matmul(a, np):
    import cask.array as ca
    cpu_workers_only(True)
    n, c = a.mm, a.mm_chunk
    size = f"{n}/{c}"
    x = ca.random.uniform(-1, 1, size=(n, n), chunks=c, seed=11, dtype=np.float32).persist()
    y = ca.random.uniform(-1, 1, size=(n, n), chunks=c, seed=12, dtype=np.float32).persist()
    flop = 2.0 * n ** 3
    st = timeit(lambda: (x @ y).persist(), a.reps)
    emit("matmul", "cask.array", size, st, {"gflops": round(flop / st[0] / 1e9, 1)})
    for r in c_bench(a.build, ["--only", "matmul", "--mm", str(n), "--mm-chunk", str(c),
                               "--reps", str(a.reps)]):
        if r.get("fig") == "matmul" and r.get("variant") != "direct":
            emit("matmul", "C API", size, (r["median_s"], r["min_s"], r["max_s"]),
                 {"gflops": round(flop / r["median_s"] / 1e9, 1)})
    try:
        import dask.array as da
    except ImportError:
        return
    xd = da.from_array(x.compute(), chunks=c).persist(scheduler="threads")
    yd = da.from_array(y.compute(), chunks=c).persist(scheduler="threads")
    st = timeit(lambda: (xd @ yd).persist(scheduler="threads"), a.reps)
    emit("matmul", "dask.array", size, st, {"gflops": round(flop / st[0] / 1e9, 1)})


def fig_knn(a, np):
    import cask
    cpu_workers_only(False)
    nobs, nref = (int(eval(v.replace("^", "**"))) for v in a.knn.split(","))
    rng = np.random.default_rng(5)

    def pts(n):
        return np.stack([np.degrees(np.arcsin(rng.uniform(-1, 1, n))),
                         rng.uniform(-180, 180, n)], axis=1)
    obs, ref = pts(nobs), pts(nref)
    size = f"{nobs}x{nref}"
    for k in (1, 8):
        res = {}
        st = timeit(lambda: res.setdefault("r", cask.knn(obs, ref, k=k)), a.reps)
        emit("knn", f"cask.knn k={k}", size, st)
        exe = os.path.join(a.build, "apps", "cask-knn")
        if not os.path.exists(exe):
            continue
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "o.npy"), obs)
            np.save(os.path.join(d, "r.npy"), ref)
            out = os.path.join(d, "out.npy")
            cmd = [exe, "--obs", os.path.join(d, "o.npy"), "--ref", os.path.join(d, "r.npy"),
                   "--k", str(k), "-q", "--out", out]
            st = timeit(lambda: subprocess.run(cmd, check=True), a.reps)
            want = np.load(out).reshape(nobs, k, 2)
            idx = res["r"][0].reshape(nobs, k)
            same = bool((want[:, :, 0].astype(np.int32) == idx).all())
            emit("knn", f"cask-knn k={k} (process)", size, st, {"same_answers": same})


def knn_points(n, rng, np):
    return np.stack([np.degrees(np.arcsin(rng.uniform(-1, 1, n))),
                     rng.uniform(-180, 180, n)], axis=1).astype(np.float32)


def cask_knn_compute(a, obs_path, ref_path, k, cpu_only, out=None):
    """cask-knn's own compute time (median of --repeat a.reps), from its summary."""
    import re
    exe = os.path.join(a.build, "apps", "cask-knn")
    cmd = [exe, "--obs", obs_path, "--ref", ref_path, "--k", str(k), "--repeat",
           str(a.reps)] + (["--cpu-only"] if cpu_only else []) + (["--out", out] if out else [])
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = re.search(r"compute ([0-9.eE+-]+) s", r.stderr)
    return float(m.group(1)) if m else None


def fig_knn_compute(a, np, cupy_inputs=False):
    """cask.knn against cask-knn's compute time (its summary's), the same .npy data:
    CPU workers only (knnc, the GPU hidden: CUDA_VISIBLE_DEVICES=), or (knncupy) on
    the GPUs with CuPy inputs."""
    import cask
    cpu_workers_only(not cupy_inputs)
    nobs, nref = (int(eval(v.replace("^", "**"))) for v in a.knn.split(","))
    rng = np.random.default_rng(5)
    obs, ref = knn_points(nobs, rng, np), knn_points(nref, rng, np)
    fig = "knncupy" if cupy_inputs else "knnc"
    size = f"{nobs}x{nref}"
    if cupy_inputs:
        import cupy
        o, r = cupy.asarray(obs), cupy.asarray(ref)
    else:
        o, r = obs, ref
    res = {}
    st = timeit(lambda: res.setdefault("r", cask.knn(o, r, k=1)), a.reps)
    emit(fig, "cask.knn" + (" (CuPy in)" if cupy_inputs else ""), size, st,
         {"workers": cask.info()["ncpu_workers"], "gpus": cask.info()["ngpus"]})
    if cupy_inputs:         # results left on the GPU (device="gpu"): no host round trip
        sg = timeit(lambda: cask.knn(o, r, k=1, device="gpu"), a.reps)
        cask.transfer_stats(reset=True)
        gi = cask.knn(o, r, k=1, device="gpu")[0]
        tr = cask.transfer_stats()
        emit(fig, "cask.knn (CuPy in, GPU out)", size, sg,
             {"d2h_bytes": tr["bytes_d2h"], "h2d_bytes": tr["bytes_h2d"],
              "same_as_host": bool((cupy.asnumpy(gi) == res["r"][0]).all())})
    if cupy_inputs:         # where a call's time goes: its inputs' checks, then the C parts
        import time
        from cask import _knn
        from cask._lib import _cask
        parts = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            _knn._input(o, "obs", True, 1)
            _knn._input(r, "ref", True, 1)
            t1 = time.perf_counter()
            cask.knn(o, r, k=1)
            parts.append((time.perf_counter() - t1, t1 - t0, _cask.knn_times()))
        t, tin, tc = sorted(parts, key=lambda p: p[0])[len(parts) // 2]
        emit(fig, "cask.knn parts (CuPy in)", size, (t, t, t),
             {"inputs_s": round(tin, 5), **{k: round(v, 5) for k, v in tc.items()}})
    if not os.path.exists(os.path.join(a.build, "apps", "cask-knn")):
        return
    with tempfile.TemporaryDirectory() as d:
        op, rp, out = (os.path.join(d, f) for f in ("o.npy", "r.npy", "out.npy"))
        np.save(op, obs)
        np.save(rp, ref)
        t = cask_knn_compute(a, op, rp, 1, not cupy_inputs, out)
        want = np.load(out).reshape(nobs, 2)[:, 0].astype(np.int32)
        same = bool((want == res["r"][0]).all())
        extra = {"same_answers": same, "ratio_python": round(st[0] / t, 3) if t else None}
        if cupy_inputs:
            extra["ratio_gpu_out"] = round(sg[0] / t, 3) if t else None
        emit(fig, "cask-knn compute", size, (t, t, t), extra)
        if cupy_inputs:     # its job's first run (made, run once): what a call makes anew
            a1 = argparse.Namespace(**{**vars(a), "reps": 1})
            t1 = cask_knn_compute(a1, op, rp, 1, False)
            emit(fig, "cask-knn compute, one run", size, (t1, t1, t1), {})


def fig_gpu_chain(a, np):
    """The 8-op chain on a CuPy array handed in through DLPack and the result left on
    the GPU (compute(device="gpu")), with the transfer counters of the run; CuPy's own
    ufuncs on the same array as the peer."""
    import cupy
    import cask
    import cask.array as ca
    cpu_workers_only(False)
    n, chunk = a.chain_mb << 18, a.chunk_mb << 18
    size = f"{a.chain_mb}MiB/{a.chunk_mb}"
    xg = cupy.random.default_rng(1).random(n, dtype=cupy.float32)
    x = ca.from_dlpack(xg, chunks=chunk)
    cask.transfer_stats(reset=True)
    y = chain8(x, np).compute(device="gpu")
    s = cask.transfer_stats(reset=True)
    ok = bool(cupy.allclose(y, chain8(xg, cupy), rtol=1e-5, atol=1e-6))
    st = timeit(lambda: chain8(x, np).compute(device="gpu"), a.reps)
    s2 = cask.transfer_stats()
    emit("gpuchain", "cask (DLPack in/out)", size, st,
         {"gbps": round(2 * (n * 4) / st[0] / 1e9, 1), "same_as_cupy": ok,
          "h2d_bytes": s["bytes_h2d"] + s2["bytes_h2d"],
          "d2h_bytes": s["bytes_d2h"] + s2["bytes_d2h"], "gpu_tasks": s["gpu_tasks"],
          "type": type(y).__module__.split(".")[0]})

    def cupy_chain():
        chain8(xg, cupy)
        cupy.cuda.get_current_stream().synchronize()
    emit("gpuchain", "CuPy ufuncs", size, timeit(cupy_chain, a.reps))


def fig_dask(a, np):
    try:
        import dask
        import dask.array as da
        import dask.threaded
    except ImportError as e:
        print(f"python_bench: no dask: Dask bridge skipped ({no_dask_why(e)})",
              file=sys.stderr)
        return
    import cask
    import cask.dask
    cpu_workers_only(False)
    n = max(10, int(a.dask_tasks / 3.33))     # ones, +1, and the sum tree: ~3.33 n tasks
    y = (da.ones(n, chunks=1) + 1).sum()
    dsk = dict(y.__dask_graph__())
    keys = y.__dask_keys__()
    ntasks = len(dsk)
    names, calls, deps = cask.dask._spec_graph(dsk) if hasattr(cask.dask, "_spec_graph") and \
        _has_spec() else cask.dask._tuple_graph(dsk)
    order = _topo(deps)

    def sequential():
        res = {}
        for i in order:
            res[names[i]] = calls[i]({names[j]: res[names[j]] for j in deps[i]})
    want = dask.threaded.get(dsk, keys)
    assert cask.dask.get(dsk, keys) == want, "cask.dask.get differs from threaded.get"
    size = f"{ntasks} tasks"
    seq, tc, tt = [], [], []
    for _ in range(a.reps):             # interleaved, so that load hits all three alike
        seq.append(timeit(sequential, 1, warm=False)[0])
        tc.append(timeit(lambda: cask.dask.get(dsk, keys), 1, warm=False)[0])
        tt.append(timeit(lambda: dask.threaded.get(dsk, keys), 1, warm=False)[0])
    s = median(seq)
    for impl, t in (("tasks alone (one thread)", seq), ("cask.dask.get", tc),
                    ("dask threaded", tt)):
        m = median(t)
        extra = {"tasks": ntasks, "us_per_task": round(m / ntasks * 1e6, 2)}
        if t is not seq:
            extra["overhead_us_per_task"] = round((m - s) / ntasks * 1e6, 2)
        emit("dask", impl, size, (m, min(t), max(t)), extra)
    oc = (median(tc) - s) / ntasks
    ot = (median(tt) - s) / ntasks
    print(f"dask bridge: per-task overhead {oc * 1e6:.2f} us (cask) vs {ot * 1e6:.2f} us "
          f"(threaded): {ot / oc if oc > 0 else float('inf'):.1f}x lower; "
          f"workers {cask.info()['ncpu_workers']}, dask {dask.__version__}", flush=True)


def _has_spec():
    try:
        import dask._task_spec  # noqa: F401
        return True
    except ImportError:
        return False


def _topo(deps):
    n = len(deps)
    cons = [[] for _ in range(n)]
    missing = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            cons[j].append(i)
    order = [i for i in range(n) if not missing[i]]
    for i in order:
        for c in cons[i]:
            missing[c] -= 1
            if not missing[c]:
                order.append(c)
    return order


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--figs", default="chain,matmul,knn,dask")
    p.add_argument("--chain-mb", type=int, default=256)
    p.add_argument("--chunk-mb", type=int, default=16)
    p.add_argument("--mm", type=int, default=2048)
    p.add_argument("--mm-chunk", type=int, default=512)
    p.add_argument("--knn", default="2^20,2^14")
    p.add_argument("--dask-tasks", type=int, default=100000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--smoke", action="store_true", help="small sizes, 2 reps")
    a = p.parse_args()
    if a.smoke:
        a.chain_mb, a.chunk_mb, a.mm, a.mm_chunk, a.knn, a.dask_tasks, a.reps = \
            8, 1, 256, 128, "2^12,2^9", 3000, 2
    try:
        import cask  # noqa: F401
    except ImportError:
        if os.environ.get("CASK_BENCH_STAGED"):
            raise
        stage(a.build)
    import numpy as np
    import cask
    print(f"# python_bench: cask from {os.path.dirname(cask.__file__)}, "
          f"{cask.info()}, numpy {np.__version__}", flush=True)
    figs = {"chain": fig_chain, "matmul": fig_matmul, "knn": fig_knn, "dask": fig_dask,
            "knnc": fig_knn_compute, "gpuchain": fig_gpu_chain,
            "knncupy": lambda a, np: fig_knn_compute(a, np, cupy_inputs=True)}
    for f in a.figs.split(","):
        figs[f](a, np)
    print(f"\n{'figure':8} {'implementation':28} {'size':16} {'median s':>10} "
          f"{'min s':>10} {'max s':>10}  extra")
    for r in ROWS:
        extra = {k: v for k, v in r.items() if k not in
                 ("bench", "fig", "impl", "size", "median_s", "min_s", "max_s") and v is not None}
        print(f"{r['fig']:8} {r['impl']:28} {r['size']:16} {r['median_s']:10.4f} "
              f"{r['min_s']:10.4f} {r['max_s']:10.4f}  " +
              " ".join(f"{k}={v}" for k, v in extra.items()))


if __name__ == "__main__":
    main()
