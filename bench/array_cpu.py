#!/usr/bin/env python3
"""bench/array_cpu.py: cask's CPU arrays against NumPy, dask.array and numexpr, in one run.

For each figure it runs bench-array-cpu (the cask side, bench/array_cpu.c) restricted to
that figure, then the Python peers on the same sizes, so that a neighbour's load hits both
alike; each side reports the median of --reps after a warm-up. Prints one JSON line per
figure and implementation ({"bench":"array_cpu","impl":...}) and a table with each
peer's time over cask's (>1: cask is faster). A peer that is not installed is named as
missing and skipped.

  python3 bench/array_cpu.py --cask build/bench/bench-array-cpu [--figs chain,light,sum,
      mean,std,matmul,stencil] [--chain-mb 256] [--chunk-mb 16] [--red-log2 28]
      [--mm 2048] [--mm-chunk 512] [--stencil 8192] [--stencil-rows 512] [--reps 5]
      [--smoke] [--cask-args "--blas-threads 1 --with-gpus"] [--no-peers]

Peers: NumPy single call (its BLAS threads for matmul); dask.array on NumPy chunks of the
same chunking with the threaded scheduler (persist, as cask persists); numexpr for the
chains (all threads). Constants are float32 so no peer computes in float64.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def timeit(fn, reps):
    fn()   # warm-up
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return median(t), min(t), max(t)


def emit(rows, impl, fig, variant, size, reps, med, lo, hi, work, unit, extra=None):
    rate = work / med / 1e9
    rec = {"bench": "array_cpu", "impl": impl, "fig": fig, "variant": variant, "size": size,
           "reps": reps, "median_s": round(med, 6), "min_s": round(lo, 6), "max_s": round(hi, 6),
           "rate": round(rate, 3), "unit": unit}
    if extra:
        rec.update(extra)
    print(json.dumps(rec), flush=True)
    rows.append(rec)


def load_peers():
    peers = {}
    for name in ("numpy", "dask", "numexpr"):
        try:
            peers[name] = __import__(name)
        except ImportError:
            print(f"array_cpu.py: {name} is missing (pip install --break-system-packages "
                  f"{name}); its figures are skipped", file=sys.stderr)
    if "dask" in peers:
        import dask.array  # noqa: F401
    return peers


def blas_info():
    try:
        from threadpoolctl import threadpool_info
        return [{k: d.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                for d in threadpool_info() if d.get("user_api") == "blas"]
    except ImportError:
        return "threadpoolctl missing"


def chain_np(np, x, light, f32):
    a, b, c, d = f32
    y = x * a
    y = np.negative(y) if light else np.sin(y)
    y += b
    np.square(y, out=y)
    y *= c
    np.sqrt(y, out=y)
    y += d
    return np.abs(y, out=y) if light else np.exp(y, out=y)


def chain_da(da, x, light, f32):
    a, b, c, d = f32
    y = x * a
    y = -y if light else da.sin(y)
    y = da.sqrt(da.square(y + b) * c) + d
    return abs(y) if light else da.exp(y)


def peers_chain(P, a, rows, light):
    np = P.get("numpy")
    if not np:
        return
    fig = "light" if light else "chain"
    n = a.chain_mb << 18
    size = f"{a.chain_mb}MiB/{a.chunk_mb}"
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    f32 = tuple(np.float32(v) for v in (1.5, 0.25, 0.5, 1.0))
    work = 2.0 * (a.chain_mb << 20)
    emit(rows, "numpy", fig, "-", size, a.reps, *timeit(lambda: chain_np(np, x, light, f32), a.reps),
         work, "GB/s")
    if "dask" in P:
        import dask
        da = P["dask"].array
        dx = da.from_array(x, chunks=a.chunk_mb << 18).persist()
        with dask.config.set(scheduler="threads"):
            emit(rows, "dask", fig, "-", size, a.reps,
                 *timeit(lambda: dask.persist(chain_da(da, dx, light, f32)), a.reps), work, "GB/s")
    if "numexpr" in P and not light:
        ne = P["numexpr"]
        out = np.empty_like(x)
        env = {"x": x, "a": f32[0], "b": f32[1], "c": f32[2], "d": f32[3]}
        fn = lambda: ne.evaluate("exp(sqrt((sin(x*a)+b)**2*c)+d)", local_dict=env, out=out)
        emit(rows, "numexpr", fig, "-", size, a.reps, *timeit(fn, a.reps), work, "GB/s",
             {"threads": ne.get_num_threads()})
    if "numexpr" in P and light:
        ne = P["numexpr"]
        out = np.empty_like(x)
        env = {"x": x, "a": f32[0], "b": f32[1], "c": f32[2], "d": f32[3]}
        fn = lambda: ne.evaluate("abs(sqrt((-(x*a)+b)**2*c)+d)", local_dict=env, out=out)
        emit(rows, "numexpr", fig, "-", size, a.reps, *timeit(fn, a.reps), work, "GB/s",
             {"threads": ne.get_num_threads()})


def peers_reduce(P, a, rows, fig):
    np = P.get("numpy")
    if not np:
        return
    n = 1 << a.red_log2
    size = f"2^{a.red_log2}/{a.chunk_mb}MiB"
    x = np.random.default_rng(7).standard_normal(n, dtype=np.float32) * np.float32(2) + np.float32(3)
    fn = {"sum": np.sum, "mean": np.mean, "std": np.std}[fig]
    emit(rows, "numpy", fig, "-", size, a.reps, *timeit(lambda: fn(x), a.reps), 4.0 * n, "GB/s")
    if "dask" in P:
        import dask
        da = P["dask"].array
        dx = da.from_array(x, chunks=min(n, a.chunk_mb << 18)).persist()
        dfn = {"sum": lambda: dx.sum(), "mean": lambda: dx.mean(), "std": lambda: dx.std()}[fig]
        with dask.config.set(scheduler="threads"):
            emit(rows, "dask", fig, "-", size, a.reps, *timeit(lambda: dfn().compute(), a.reps),
                 4.0 * n, "GB/s")


def peers_matmul(P, a, rows, n):
    np = P.get("numpy")
    if not np:
        return
    t = min(a.mm_chunk, n)
    size = f"{n}/{t}"
    rng = np.random.default_rng(11)
    A = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    B = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    work = 2.0 * n ** 3
    emit(rows, "numpy", "matmul", "sgemm", size, a.reps, *timeit(lambda: A @ B, a.reps), work,
         "GFLOP/s", {"blas": blas_info()})
    if "dask" in P:
        import dask
        da = P["dask"].array
        dA = da.from_array(A, chunks=(t, t)).persist()
        dB = da.from_array(B, chunks=(t, t)).persist()
        with dask.config.set(scheduler="threads"):
            emit(rows, "dask", "matmul", "sgemm", size, a.reps,
                 *timeit(lambda: dask.persist(dA @ dB), a.reps), work, "GFLOP/s")


def peers_stencil(P, a, rows):
    np = P.get("numpy")
    if not np:
        return
    n = a.stencil
    size = f"{n}/{a.stencil_rows}rows"
    u = np.random.default_rng(3).random((n, n), dtype=np.float32)
    q = np.float32(0.25)

    def step_np(u):
        o = u.copy()
        o[1:-1, 1:-1] = q * ((u[:-2, 1:-1] + u[2:, 1:-1]) + (u[1:-1, :-2] + u[1:-1, 2:]))
        return o

    work = 2.0 * n * n * 4
    emit(rows, "numpy", "stencil", "-", size, a.reps, *timeit(lambda: step_np(u), a.reps), work, "GB/s")
    if "dask" in P:
        import dask
        da = P["dask"].array
        du = da.from_array(u, chunks=(min(a.stencil_rows, n), n)).persist()

        def blk(b):   # a block with its halo (depth 1, edges kept by "none")
            o = b.copy()
            o[1:-1, 1:-1] = q * ((b[:-2, 1:-1] + b[2:, 1:-1]) + (b[1:-1, :-2] + b[1:-1, 2:]))
            return o

        fn = lambda: dask.persist(du.map_overlap(blk, depth={0: 1, 1: 0}, boundary="none"))
        with dask.config.set(scheduler="threads"):
            emit(rows, "dask", "stencil", "map_overlap", size, a.reps, *timeit(fn, a.reps), work, "GB/s")


def run_cask(a, fig, rows, extra):
    cmd = [a.cask, "--only", fig, "--chain-mb", str(a.chain_mb), "--chunk-mb", str(a.chunk_mb),
           "--red-log2", str(a.red_log2), "--mm", ",".join(map(str, extra)) if extra else str(a.mm[0]),
           "--mm-chunk", str(a.mm_chunk), "--stencil", str(a.stencil),
           "--stencil-rows", str(a.stencil_rows), "--reps", str(a.reps)] + a.cask_args.split()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            print(line, flush=True)
            rows.append(json.loads(line))
    if p.returncode:
        sys.stderr.write(p.stderr)
        print(f"array_cpu.py: {' '.join(cmd)} failed ({p.returncode})", file=sys.stderr)
    return p.returncode


def table(rows):
    print()
    print(f"{'figure':8} {'size':15} {'impl':14} {'median_s':>10} {'rate':>9} {'unit':8} {'peer/cask':>9}")
    keys = []
    for r in rows:
        k = (r["fig"], r["size"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in rows if (r["fig"], r["size"]) == k]
        cask = [r for r in rs if r["impl"] == "cask"]
        best = min((r["median_s"] for r in cask), default=None)
        for r in rs:
            name = r["impl"] + ("" if r["variant"] in ("-",) else "/" + r["variant"])
            ratio = f"{r['median_s'] / best:9.2f}" if best and r["impl"] != "cask" else ""
            print(f"{r['fig']:8} {r['size']:15} {name:14} {r['median_s']:10.4f} {r['rate']:9.2f} "
                  f"{r['unit']:8} {ratio}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cask", default=os.path.join("build", "bench", "bench-array-cpu"))
    ap.add_argument("--figs", default="chain,light,sum,mean,std,matmul,stencil")
    ap.add_argument("--chain-mb", type=int, default=256)
    ap.add_argument("--chunk-mb", type=int, default=16)
    ap.add_argument("--red-log2", type=int, default=28)
    ap.add_argument("--mm", default="2048")
    ap.add_argument("--mm-chunk", type=int, default=512)
    ap.add_argument("--stencil", type=int, default=8192)
    ap.add_argument("--stencil-rows", type=int, default=512)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--cask-args", default="", help="more arguments for bench-array-cpu")
    ap.add_argument("--no-peers", action="store_true", help="cask alone")
    a = ap.parse_args()
    if a.smoke:
        a.chain_mb, a.chunk_mb, a.red_log2, a.mm, a.mm_chunk = 8, 1, 20, "256", 128
        a.stencil, a.stencil_rows, a.reps = 512, 64, 2
    a.mm = [int(v) for v in a.mm.split(",") if v]
    P = {} if a.no_peers else load_peers()
    print(json.dumps({"bench": "array_cpu", "peers": sorted(P), "blas": blas_info() if "numpy" in P else None,
                      "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                             "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")},
                      "cpus": os.cpu_count()}), flush=True)
    rows, rc = [], 0
    for fig in a.figs.split(","):
        if fig == "matmul":
            for n in a.mm:
                rc |= run_cask(a, fig, rows, [n])
                peers_matmul(P, a, rows, n)
            continue
        rc |= run_cask(a, fig, rows, None)
        if fig in ("chain", "light"):
            peers_chain(P, a, rows, fig == "light")
        elif fig in ("sum", "mean", "std"):
            peers_reduce(P, a, rows, fig)
        elif fig == "stencil":
            peers_stencil(P, a, rows)
    table(rows)
    return rc


if __name__ == "__main__":
    sys.exit(main())
