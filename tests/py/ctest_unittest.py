"""unittest's main for the Python tests that ctest runs: a skip is not a pass (issue #63).

unittest.main exits 0 when tests were skipped, and ctest then shows the script as Passed. main()
runs the tests and exits
  1   when a test failed or erred (whatever else was skipped),
  77  (SKIP_EXIT) when no test failed and at least one was skipped, even if others ran: ctest shows
      the entry as "Not Run (Skipped)" (tests/CMakeLists.txt sets SKIP_RETURN_CODE 77 on every
      Python test), and the unittest summary above says which tests ran;
  0   when every test ran and passed.
Each skip is printed at the end as one line "SKIPPED: <script>: <test>: <reason>", which
tools/check_skips.py (the CI's skip check, tools/test.sh) matches against its allow-list.
skip_all(reason) is the same for a script that cannot run at all (no venv, no binary).
Standard library only: tf_fidelity.py imports it from its TensorFlow venv's Python."""
import os
import sys
import unittest

SKIP_EXIT = 77


def _script():
    return os.path.basename(sys.argv[0]) or "python"


def skip_all(reason):
    """The whole script is skipped: says why, then exits SKIP_EXIT."""
    sys.stdout.flush()
    print(f"SKIPPED: {_script()}: {reason}", flush=True)
    sys.exit(SKIP_EXIT)


def exit_code(result):
    """1 on a failure, SKIP_EXIT when something was skipped and nothing failed, else 0."""
    if not result.wasSuccessful():
        return 1
    if result.skipped:
        return SKIP_EXIT
    return 0


def main(verbosity=2, argv=None):
    """unittest.main (test names from the command line as usual), then the exit status above."""
    prog = unittest.main(module="__main__", argv=argv, verbosity=verbosity, exit=False)
    result = prog.result
    sys.stderr.flush()
    for test, reason in result.skipped:
        print(f"SKIPPED: {_script()}: {test.id()}: {reason}", flush=True)
    if result.testsRun == 0 and not result.skipped and result.wasSuccessful():
        print(f"{_script()}: no test ran (a name that matches nothing?)", flush=True)
        sys.exit(1)
    sys.exit(exit_code(result))
