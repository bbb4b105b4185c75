"""Settings for every pytest run of this repository: the unit tests (tests/) and nbval's run of the
notebooks (chapters/), which a conftest.py inside tests/ would not reach."""

import os

# A claim that does not hold fails every test run, the notebooks' under nbval included (their kernels
# inherit this environment); only a student's own run shows it in a box and goes on.
os.environ.setdefault("COURSE_STRICT_CLAIMS", "1")

# A cell whose output depends on the training seed but not on the CPU (an untrained model's printout,
# a provenance line) carries the tag nbval-seed-dependent: compared exactly at the course's own seeds,
# not when COURSE_SEED_SHIFT moves them (make nbval-robust).
if os.environ.get("COURSE_SEED_SHIFT", "0").strip() not in ("", "0"):
    try:
        from nbval import plugin as _nbval_plugin
    except ImportError:                                   # nbval is a test dependency; without it, nothing to do
        _nbval_plugin = None
    if _nbval_plugin is not None:
        _nbval_plugin.metadata_tags["nbval-seed-dependent"] = _nbval_plugin.metadata_tags["nbval-ignore-output"]
