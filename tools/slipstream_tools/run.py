"""`slipstream run`: exec a program with the LD_PRELOAD shim (libslipstream-preload.so)."""

import os

PRELOAD_NAME = "libslipstream-preload.so"
# Installed locations, searched after $SLIPSTREAM_BUILD and the repository's build/.
INSTALLED_DIRS = ("/usr/local/lib", "/usr/local/lib/x86_64-linux-gnu",
                  "/usr/lib", "/usr/lib/x86_64-linux-gnu")


class RunError(Exception):
    pass


def preload_find(env=None):
    """Absolute path of the shim, or raise RunError listing where we looked."""
    env = os.environ if env is None else env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    looked = []
    build = env.get("SLIPSTREAM_BUILD")
    if build:
        looked += [os.path.join(build, "src", "preload", PRELOAD_NAME),
                   os.path.join(build, PRELOAD_NAME)]
    looked.append(os.path.join(repo, "build", "src", "preload", PRELOAD_NAME))
    looked += [os.path.join(d, PRELOAD_NAME) for d in INSTALLED_DIRS]
    for path in looked:
        if os.path.isfile(path):
            return os.path.abspath(path)
    raise RunError("%s not found (looked in: %s); build it or set SLIPSTREAM_BUILD"
                   % (PRELOAD_NAME, ", ".join(looked)))


def run_env(args, env=None):
    """The environment for CMD: a copy of @env with the shim and its settings."""
    env = dict(os.environ if env is None else env)
    shim = preload_find(env)
    old = env.get("LD_PRELOAD", "")
    parts = [p for p in old.replace(":", " ").split() if p and p != shim]
    env["LD_PRELOAD"] = " ".join([shim] + parts)
    if args.sock:
        env["SLIPSTREAM_SOCK"] = os.path.abspath(args.sock)
    if args.strict:
        env["SLIPSTREAM_STRICT"] = "1"
    if args.conns is not None:
        env["SLIPSTREAM_CONNS"] = str(args.conns)
    if args.buf is not None:
        env["SLIPSTREAM_BUF"] = str(args.buf)
    return env


def run_exec(args):
    """Replace this process with CMD (signals and the exit code pass through)."""
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise RunError("run: no command given (slipstream run [OPTIONS] -- CMD ARGS...)")
    env = run_env(args)
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        raise RunError("run: cannot execute %s: %s" % (cmd[0], e.strerror))
