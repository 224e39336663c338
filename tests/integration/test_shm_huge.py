"""The applications' shared regions on huge pages, populated ahead of use
(--shm-huge auto, the default; src/stack/populate.h).

With the host's shmem THP mode at "advise" (set here and put back after),
an echo server under `slipstream run` serves 600 connections from a Linux
client that checks every echoed byte.  The service reports its regions
on huge pages; the fast path woke the control thread to populate further
(app_populate_kicks); the bytes populated ahead cover the rings the plan
had reached by then; and the service's mapping of the region is on 2 MiB
pages (ShmemPmdMapped).  With the mode at "never" the same default leaves
the regions on small pages and populates nothing."""

import json
import re

import pytest

import apps_lib
from harness import BUILD

KNOB = "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
PORT = 7300
CONNS = 600
SLOT = 512 * 1024  # the POSIX layer's default rings: 256 KiB each way
AHEAD = (32 << 20) // SLOT  # slots populated at attach (populate.h: 32 MiB)


def knob_mode():
    return re.search(r"\[(\w+)\]", open(KNOB).read()).group(1)


def knob_set(mode):
    with open(KNOB, "w") as f:
        f.write(mode)


@pytest.fixture
def shmem_thp():
    """Sets the host's shmem THP mode for the test; puts the old one back."""
    try:
        old = knob_mode()
        knob_set(old)
    except (OSError, AttributeError) as e:
        pytest.skip("shmem THP mode not settable here: %s" % e)
    try:
        yield knob_set
    finally:
        knob_set(old)


def pmd_mapped_kb(pid):
    """kB of the service's mappings of application regions on 2 MiB pages."""
    total, in_region = 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                in_region = "slipstream-app" in line
            elif in_region and line.startswith(("ShmemPmdMapped:", "FilePmdMapped:")):
                total += int(line.split()[1])
    return total


def echo_run(bed):
    """600 connections of 64-byte RPCs for 2 s, every byte checked."""
    srv = bed.start("echo", "slipstream", [str(BUILD / "bench" / "linux_echo"), "--port",
                                           str(PORT)])
    ip = bed.server_ip("slipstream")
    bed.wait_listen(ip, PORT, srv)
    r = bed.run(bed.client_ns, [str(BUILD / "bench" / "linux_rpc"), "--size", "64",
                                "--connect", "%s:%d" % (ip, PORT), "--conns", str(CONNS),
                                "--seconds", "2", "--warmup", "0", "--connect-seconds", "20"],
                timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["error"] is None and out["connected"] == CONNS, out
    assert out["requests"] > CONNS, out
    return srv


def test_regions_huge_and_populated_ahead(shmem_thp, prefix_new_fn):
    shmem_thp("advise")
    with apps_lib.bed_up(prefix_new_fn()) as bed:
        info = bed.svc.query("stats")["service"]
        assert info["shm_huge"] is True and info["shmem_thp"] == "advise", info
        assert info["shm_populated_bytes"] == 0 and info["shm_populate_errors"] == 0, info
        srv = echo_run(bed)
        st = bed.svc.query("stats")
        info, ctr = st["service"], st["counters"]
        # The first kick mark is slot AHEAD / 2 (AHEAD slots, 32 MiB of
        # rings, populated at attach); the plan made then reaches at least
        # AHEAD / 2 + 1 + AHEAD slots.  How many marks follow depends on how
        # far the connections had got when the control thread planned.
        assert ctr["app_populate_kicks"] >= 1, ctr["app_populate_kicks"]
        # Slots handed out before the control thread got to their rings (a
        # burst outrunning it): at most every slot past the first AHEAD.
        assert 0 <= ctr["app_slot_unpopulated"] <= CONNS - AHEAD, ctr["app_slot_unpopulated"]
        assert info["shm_populated_bytes"] >= (AHEAD // 2 + 1 + AHEAD) * SLOT, info
        assert info["shm_populate_errors"] == 0, info
        assert pmd_mapped_kb(bed.svc.pid) >= 2048 * 16, pmd_mapped_kb(bed.svc.pid)
        bed.stop(srv)


def test_regions_small_without_host_mode(shmem_thp, prefix_new_fn):
    shmem_thp("never")
    with apps_lib.bed_up(prefix_new_fn()) as bed:
        info = bed.svc.query("stats")["service"]
        assert info["shm_huge"] is False and info["shmem_thp"] == "never", info
        srv = echo_run(bed)
        st = bed.svc.query("stats")
        assert st["service"]["shm_populated_bytes"] == 0, st["service"]
        assert st["counters"]["app_populate_kicks"] == 0, st["counters"]
        assert st["counters"]["app_slot_unpopulated"] == 0, st["counters"]
        assert pmd_mapped_kb(bed.svc.pid) == 0
        bed.stop(srv)
        assert knob_mode() == "never"  # auto never changes it
