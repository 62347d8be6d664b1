"""transport/ucx_wheel.py: where python3's libucx wheel (libucx-cu13, UCX with CUDA
transports) lives, for meson.build. Prints its folder and UCX version on two lines, or
exits 1 (no wheel, or one without headers and libraries)."""
import os
import re
import sys

try:
    import libucx
except ImportError as e:
    sys.exit("no libucx module: %s" % e)
d = os.path.dirname(os.path.abspath(libucx.__file__))
if not os.path.isfile(os.path.join(d, "include", "ucp", "api", "ucp.h")) or \
   not os.path.isfile(os.path.join(d, "lib", "libucp.so")):
    sys.exit("libucx at %s has no include/ucp/api/ucp.h or lib/libucp.so" % d)
ver = "unknown"
try:
    with open(os.path.join(d, "lib", "pkgconfig", "ucx.pc")) as f:
        m = re.search(r"^Version:\s*(\S+)", f.read(), re.M)
        if m:
            ver = m.group(1)
except OSError:
    pass
print(d)
print(ver)
