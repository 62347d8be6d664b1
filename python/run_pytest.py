#!/usr/bin/env python3
"""run_pytest.py: the Meson suite `python`: pytest on python/tests against this build.

Usage: run_pytest.py BUILD_DIR/python SOURCE_DIR/python [pytest args]

Stages the package (python/cask/*.py beside the _cask extension just built) in
BUILD_DIR/python/staged and runs pytest with an interpreter that can load the extension
and has NumPy and pytest: this one, else /usr/bin/python3 (Debian's packages, which
`sh deps.sh` installs). Exit 77 (Meson's SKIP) only when no such interpreter exists,
saying what is missing; Hypothesis and Dask missing skip their tests alone (and say so).
"""
import glob
import os
import shutil
import subprocess
import sys


def main():
    build, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    exts = glob.glob(os.path.join(build, "_cask*.so"))
    if not exts:
        print(f"run_pytest: no _cask extension in {build}", file=sys.stderr)
        return 1
    ext = os.path.basename(exts[0])
    staged = os.path.join(build, "staged")
    pkg = os.path.join(staged, "cask")
    shutil.rmtree(staged, ignore_errors=True)
    os.makedirs(pkg)
    for f in glob.glob(os.path.join(src, "cask", "*")):
        os.symlink(os.path.abspath(f), os.path.join(pkg, os.path.basename(f)))
    os.symlink(os.path.abspath(exts[0]), os.path.join(pkg, ext))
    probe = ("import importlib.machinery as m, sys; "
             f"ok = any({ext!r}.endswith(s) for s in m.EXTENSION_SUFFIXES); "
             "import numpy, pytest; sys.exit(0 if ok else 3)")
    tried = []
    for py in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not os.path.exists(py):
            continue
        r = subprocess.run([py, "-c", probe], capture_output=True, text=True)
        if r.returncode == 0:
            break
        why = ("cannot load " + ext) if r.returncode == 3 else r.stderr.strip().splitlines()[-1]
        tried.append(f"{py}: {why}")
    else:
        print("run_pytest: SKIP: no Python with NumPy and pytest that loads the extension "
              "(sh deps.sh installs python3-numpy python3-pytest):\n  " + "\n  ".join(tried))
        return 77
    env = dict(os.environ, PYTHONPATH=staged + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1",
               # the extension's run path is relative to where it was built ($ORIGIN/..)
               LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(build)) + os.pathsep +
               os.environ.get("LD_LIBRARY_PATH", ""))
    cmd = [py, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           os.path.join(src, "tests")] + sys.argv[3:]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, cwd=build).returncode


if __name__ == "__main__":
    sys.exit(main())
