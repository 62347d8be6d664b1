#!/usr/bin/env python3
"""runtime/embed_page.py IN OUT: writes a C file defining dashboard_page_html (the bytes
of IN, NUL-terminated) and dashboard_page_len, so the page ships inside libcask."""
import sys

data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "w") as out:
    out.write("/* generated from runtime/dashboard.html by runtime/embed_page.py */\n")
    out.write("const char dashboard_page_html[] = {\n")
    for i in range(0, len(data), 16):
        out.write("    " + ", ".join(str(b) for b in data[i:i + 16]) + ",\n")
    out.write("    0\n};\n")
    out.write("const unsigned long dashboard_page_len = %d;\n" % len(data))
