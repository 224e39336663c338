"""Facts about the machine and the build, recorded with every run."""

import os
import platform
import resource
import subprocess
import time
from pathlib import Path


def _read(path, default=None):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _cmd(argv, cwd=None):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=cwd)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def cpu_model():
    for line in (_read("/proc/cpuinfo", "") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def facts(repo):
    """A JSON-able dict: CPU, memory, kernel, limits, load, the build's commit."""
    mem_kb = None
    for line in (_read("/proc/meminfo", "") or "").splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    dirty = _cmd(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "hostname": platform.node(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_gib": round(mem_kb / 1048576, 1) if mem_kb else None,
        "kernel": platform.release(),
        "os": _read("/etc/debian_version"),
        "dpdk": _cmd(["pkg-config", "--modversion", "libdpdk"]),
        "git_commit": _cmd(["git", "rev-parse", "HEAD"], cwd=repo),
        "git_dirty": bool(dirty) if dirty is not None else None,
        "nofile_limit": [soft, hard],
        "ip_local_port_range": _read("/proc/sys/net/ipv4/ip_local_port_range"),
        "loadavg": (_read("/proc/loadavg", "") or "").split()[:3],
    }


def loadavg():
    return (_read("/proc/loadavg", "") or "").split()[:3]
