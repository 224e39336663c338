"""The benchmark suite of bench/suite.py: Slipstream against Linux
in one run.  One module per concern:

  cpu       /proc/stat snapshots and deltas, other people's load (pure + /proc)
  machine   facts about the machine and the build, for the JSON
  procs     starting, pinning and stopping the programs of a run
  beds      the set-ups (server-side, both ends) for each stack
  points    which benchmarks exist and which points each runs
  runner    one point on one stack: the client, its CPU window, its result
  report    ratios, the markdown tables, the JSON document (pure)
  plots     the PNG figures (matplotlib; optional)
"""
