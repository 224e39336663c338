#!/usr/bin/env python3
"""check_no_shim_calls.py - libslipstream's objects call no libc name the preload shim overrides.

Inside libslipstream-preload.so, the library (linked whole into it) and
the shim share one symbol namespace: a call of close(), poll(), send()...
by name from src/lib binds to the shim's own override, not to libc.  The
library makes such calls through the ss_sys_* wrappers of src/lib/lib.h
(raw system calls) or, in the POSIX layer, through ssp_real (libc's
functions found with dlsym(RTLD_NEXT)), never by name.

    check_no_shim_calls.py NM EXPORTS_MAP ARCHIVE...

Reads the overridden names from the version script (the global: list of
src/preload/exports.map), lists the undefined symbols of every object in
the archives with nm, and fails naming each object and symbol that
matches.  Exit 0 when there are none, 1 when there are, 77 (skipped) when
nm cannot be run.
"""

import re
import subprocess
import sys


def overridden(path):
    text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
    m = re.search(r"global\s*:(.*?)local\s*:", text, flags=re.S)
    if not m:
        raise SystemExit("check_no_shim_calls: no global: list in %s" % path)
    return {n for n in re.split(r"[\s;]+", m.group(1)) if n}


def undefined(nm, archive):
    """(object, symbol) for each undefined symbol of each object."""
    out = subprocess.run([nm, "-A", "-u", archive], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        # "archive.a:member.o:                 U close" (GNU and LLVM nm)
        parts = line.rsplit(None, 2)
        if len(parts) < 3 or parts[-2] not in ("U", "w", "v"):
            continue
        obj = parts[0].rstrip(":")
        yield obj, parts[-1].split("@")[0]


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    nm, mapfile, archives = sys.argv[1], sys.argv[2], sys.argv[3:]
    names = overridden(mapfile)
    if len(names) < 10:
        raise SystemExit("check_no_shim_calls: only %d names in %s" % (len(names), mapfile))
    bad, n_objs = [], set()
    for a in archives:
        try:
            for obj, sym in undefined(nm, a):
                n_objs.add(obj)
                if sym in names:
                    bad.append((obj, sym))
        except (OSError, subprocess.CalledProcessError) as e:
            print("check_no_shim_calls: cannot run %s on %s: %s" % (nm, a, e))
            return 77
    if not n_objs:
        print("check_no_shim_calls: no undefined symbols found in %s" % " ".join(archives))
        return 1
    for obj, sym in sorted(set(bad)):
        print("%s: calls %s() by name: the preload shim overrides it; use its "
              "ss_sys_* wrapper (src/lib/lib.h) or ssp_real" % (obj, sym))
    print("check_no_shim_calls: %d objects, %d overridden names, %d calls by name"
          % (len(n_objs), len(names), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
