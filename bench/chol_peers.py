#!/usr/bin/env python3
"""bench/chol_peers.py: cask's tiled Cholesky (cask-chol) against its peers in one run.

Peers, each where it is installed (a missing one is reported as skipped, never guessed):
  cuSOLVER through PyTorch (torch.linalg.cholesky on the GPU): host to host (pinned copy
    in, factor, copy out: the same call as cask-chol's default) and resident (the matrix
    already on the GPU, as cask-chol --resident);
  PyTorch's CPU Cholesky (MKL), SciPy's (its OpenBLAS), NumPy's, dask.array.linalg
    .cholesky (threads, chunks of the tile size);
  StarPU's cholesky_implicit from Debian's starpu-examples (float32 only: the example's
    precision; the same n and tile size; OPENBLAS_CORETYPE is set where Debian's OpenBLAS
    0.3.21 does not know the CPU, as cask itself does for its own OpenBLAS).
cask-chol cases: "gpu" (tiles on the GPU only), "mixed" (CPU workers and the GPU, the
cost model choosing; its model kept in CASK_PERFMODEL, calibrated by the warm-up runs),
"resident", "cpu" (--cpu-only). Rates are n^3/3 flops over the median time of --reps
runs after one warm-up. Matrices: n I + (R + R^T)/2.

Prints a table and one JSON line per figure ({"bench": "chol", ...}). --smoke: a small
size, every peer that is there (CI's smoke test).

  python3 bench/chol_peers.py --build build --n 4096 --tile 512 --dtype f64 \
      --cases cask-cpu,scipy,torch-cpu,numpy,dask --reps 3
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

STARPU = os.environ.get("STARPU_CHOLESKY",
                        "/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit")
ALL = ("cask-gpu cask-mixed cask-resident cask-cpu torch-gpu-host torch-gpu-resident "
       "torch-cpu scipy numpy dask starpu").split()


def spd(n, dtype):
    import numpy as np
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n))
    a = (a + a.T) / 2
    a[np.diag_indices(n)] += n
    return np.ascontiguousarray(a.astype(dtype))


def timed(fn, reps):
    fn()   # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def openblas_core_env():
    """OPENBLAS_CORETYPE for Debian's OpenBLAS 0.3.21 on CPUs it does not know (its generic
    kernels otherwise): SkylakeX with AVX-512, Haswell with AVX2 (what cask asks for)."""
    env = dict(os.environ)
    if "OPENBLAS_CORETYPE" in env:
        return env
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line
                    break
    except OSError:
        pass
    if all(x in flags.split() for x in ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")):
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif "avx2" in flags.split() and "fma" in flags.split():
        env["OPENBLAS_CORETYPE"] = "Haswell"
    return env


def run_cask(args, case, n, tile, dt, reps):
    exe = os.path.join(args.build, "apps", "cask-chol")
    if not os.path.exists(exe):
        return None, "no %s" % exe
    cmd = [exe, "--n", str(n), "--tile", str(tile), "--dtype", dt, "--repeat", str(reps),
           "--warmup", str(args.warmup), "--json", "-q"]
    if case == "cask-cpu":
        cmd.append("--cpu-only")
    elif case == "cask-gpu":
        cmd.append("--gpu-only")
    elif case == "cask-resident":
        cmd += ["--resident", "--gpu-only"]
    env = dict(os.environ)
    env["CASK_PERFMODEL"] = args.perfmodel
    if case != "cask-cpu" and not args.have_gpu:
        return None, "no GPU"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        return None, "cask-chol failed (%d): %s" % (p.returncode, p.stderr.strip()[-300:])
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            # cask-chol times its own runs: its median and min, not a list of times
            return dict(median=j["median_s"], min=j["min_s"], reps=reps), \
                "tasks cpu %d gpu %d" % (j["tasks_cpu"], j["tasks_gpu"])
    return None, "no JSON line from cask-chol"


def run_peer(args, case, n, tile, dt, reps):
    try:
        import numpy as np
        dtype = np.float64 if dt == "f64" else np.float32
    except ImportError:
        np = dtype = None
    if case == "starpu":
        if dt != "f64" and os.path.exists(STARPU):
            env = openblas_core_env()
            # (Debian's StarPU is built without CUDA: CPU workers only)
            # (one BLAS thread per StarPU worker, as StarPU advises: its workers are the
            # parallelism; OpenBLAS threads inside each would oversubscribe the cores)
            env.update(STARPU_NOPENCL="0", STARPU_SCHED=args.starpu_sched, STARPU_SILENT="1",
                       OPENBLAS_NUM_THREADS="1")
            times = []
            for r in range(reps + 1):
                p = subprocess.run([STARPU, "-size", str(n), "-nblocks", str(max(1, n // tile))],
                                   env=env, capture_output=True, text=True, timeout=args.timeout)
                rows = [l.split() for l in p.stdout.splitlines() if l and l[0].isdigit()]
                if p.returncode != 0 or not rows:
                    return None, "cholesky_implicit failed (%d): %s" % (
                        p.returncode, (p.stderr + p.stdout).strip()[-300:])
                if r > 0:   # the first run calibrates StarPU's models
                    times.append(float(rows[-1][1]) / 1e3)
            return times, "sched %s, OPENBLAS_CORETYPE=%s" % (args.starpu_sched,
                                                            env.get("OPENBLAS_CORETYPE", "-"))
        return None, "not installed" if dt != "f64" else "float32 only"
    try:
        a = spd(n, dtype)
    except ImportError:
        return None, "NumPy not installed"
    if case == "numpy":
        if np is None:
            return None, "not installed"
        return timed(lambda: np.linalg.cholesky(a), reps), ""
    if case == "scipy":
        try:
            import scipy.linalg as sl
        except ImportError:
            return None, "not installed"
        return timed(lambda: sl.cholesky(a, lower=True, check_finite=False), reps), ""
    if case == "dask":
        try:
            import dask.array as da
        except ImportError:
            return None, "not installed"
        x = da.from_array(a, chunks=(tile, tile))
        return timed(lambda: da.linalg.cholesky(x, lower=True).compute(scheduler="threads"),
                     reps), ""
    try:
        import torch
    except ImportError:
        return None, "not installed"
    if case == "torch-cpu":
        torch.set_num_threads(os.cpu_count() or 1)
        t = torch.from_numpy(a)
        return timed(lambda: torch.linalg.cholesky(t), reps), "threads %d" % torch.get_num_threads()
    if not torch.cuda.is_available():
        return None, "no GPU"
    tdt = torch.float64 if dt == "f64" else torch.float32
    if case == "torch-gpu-resident":
        g = torch.from_numpy(a).cuda()

        def f():
            torch.linalg.cholesky(g)
            torch.cuda.synchronize()
        return timed(f, reps), "cuSOLVER"
    hin = torch.from_numpy(a).pin_memory()
    hout = torch.empty((n, n), dtype=tdt).pin_memory()

    def g():
        d = hin.cuda(non_blocking=True)
        hout.copy_(torch.linalg.cholesky(d), non_blocking=True)
        torch.cuda.synchronize()
    return timed(g, reps), "cuSOLVER, pinned copies"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", default="4096", help="comma-separated sizes (2^K accepted)")
    ap.add_argument("--tile", type=int, default=512)
    ap.add_argument("--dtype", default="f64", help="f64, f32 or both (f64,f32)")
    ap.add_argument("--cases", default=",".join(ALL))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--starpu-sched", default="dmda")
    ap.add_argument("--perfmodel", default=None)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--smoke", action="store_true", help="n 512, tile 128, 1 rep: CI")
    args = ap.parse_args()
    if args.smoke:
        args.n, args.tile, args.reps = "512", 128, 1
    if args.perfmodel is None:
        args.perfmodel = os.path.join(tempfile.gettempdir(), "cask-chol-perfmodel")
    try:
        import torch
        args.have_gpu = torch.cuda.is_available()
    except ImportError:
        args.have_gpu = shutil.which("nvidia-smi") is not None and \
            subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    sizes = [1 << int(s[2:]) if s.startswith("2^") else int(s) for s in args.n.split(",")]
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in ALL:
            sys.exit("unknown case %s (one of %s)" % (c, " ".join(ALL)))
    rows = []
    failed = []
    print("%-20s %7s %5s %4s %10s %9s  %s" % ("case", "n", "tile", "dt", "median s", "GFLOP/s", "note"))
    for dt in args.dtype.split(","):
        for n in sizes:
            for c in cases:
                run = run_cask if c.startswith("cask") else run_peer
                try:
                    times, note = run(args, c, n, args.tile, dt, args.reps)
                except Exception as e:   # a peer that breaks is reported, the rest go on
                    times, note = None, "error: %s" % e
                if not times:
                    if c.startswith("cask") and note != "no GPU":
                        failed.append("%s n=%d %s: %s" % (c, n, dt, note))
                    print("%-20s %7d %5d %4s %10s %9s  skipped: %s" % (c, n, args.tile, dt, "-", "-", note))
                    continue
                if isinstance(times, dict):
                    med, mn, nreps = times["median"], times["min"], times["reps"]
                else:
                    med, mn, nreps = statistics.median(times), min(times), len(times)
                gf = n ** 3 / 3 / med * 1e-9
                print("%-20s %7d %5d %4s %10.4f %9.1f  %s" % (c, n, args.tile, dt, med, gf, note), flush=True)
                rows.append(dict(bench="chol", case=c, n=n, tile=args.tile, dtype=dt,
                                 median_s=round(med, 6), min_s=round(mn, 6),
                                 reps=nreps, gflops=round(gf, 1), note=note))
    for r in rows:
        print(json.dumps(r))
    for f in failed:
        print("FAILED: %s" % f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
