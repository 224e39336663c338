"""Repository-relative paths in what the suite writes: results are committed,
and a build or scratch directory of the machine that ran them means nothing
to a reader (scripts/check_tree.sh rejects absolute ones under docs/benchmarks/).
Pure."""

import re


def relative(obj, repo, build, out=None):
    """A copy of @obj (JSON-like) with every string's paths made relative:
    the build directory @build becomes "build/", the repository @repo the
    repository root, and the value of an "--out DIR" outside the repository
    "DIR" (@out: that directory, whose name is dropped wherever it appears)."""
    repo, build = str(repo).rstrip("/"), str(build).rstrip("/")
    out = str(out).rstrip("/") if out else None

    def one(s):
        s = s.replace(build + "/", "build/").replace(build, "build")
        if out and not out.startswith(repo + "/"):
            s = s.replace(out, "DIR")
        s = s.replace(repo + "/", "")
        return re.sub(r"(--out[ =])/\S+", r"\1DIR", s)

    if isinstance(obj, str):
        return one(obj)
    if isinstance(obj, list):
        items = [relative(v, repo, build, out) for v in obj]
        for i in range(1, len(items)):     # an argv: "--out", "/abs/dir"
            if items[i - 1] == "--out" and isinstance(items[i], str) \
                    and items[i].startswith("/"):
                items[i] = "DIR"
        return items
    if isinstance(obj, dict):
        return {k: relative(v, repo, build, out) for k, v in obj.items()}
    return obj
