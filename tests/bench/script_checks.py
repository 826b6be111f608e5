"""script_checks.py: what the tests of bench/'s shell scripts share: a missing input file must be
a usage error (exit 2) whose message names it, and the failures are printed, then a summary."""
import subprocess


def missing_file_named(cmd, path, what, failures, env=None):
    """Runs `cmd` (which names the nonexistent `path`); appends a failure unless it exits 2
    naming `path` on stderr."""
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 2 or path not in run.stderr:
        failures.append(f"{what}: exit {run.returncode}, '{run.stderr.strip()}'")


def report(failures, summary):
    """Prints each failure and `summary`; the exit status: 1 if any failed, else 0."""
    for failure in failures:
        print("FAIL:", failure)
    print(summary)
    return 1 if failures else 0
