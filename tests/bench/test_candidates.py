"""test_candidates.py: every template candidate kept in bench/candidates/ still applies to
templates/, generates every shipped winner's kernel, changes at least one of them, and
has a checks file whose every line checks a launch the candidate changes, with arguments
`scanforge check` accepts, so that a device call spent on it
is not lost to a patch that no longer fits (bench/candidates/README.md).

usage: test_candidates.py SCANFORGE_CLI"""
import functools
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from compare_generated import tuned_specs  # noqa: E402


def apply_patch(patch, into):
    """Applies `patch` to a copy of templates/ under `into`; returns the copy's templates."""
    shutil.copytree(os.path.join(ROOT, "templates"), os.path.join(into, "templates"))
    if shutil.which("patch"):
        with open(patch) as f:
            subprocess.run(["patch", "-p1", "-s"], cwd=into, stdin=f, check=True)
    else:
        subprocess.run(["git", "apply", "-p1", patch], cwd=into, check=True)
    return os.path.join(into, "templates")


def generated(cli, spec, template_dir):
    """The source `scanforge gen` writes for spec, without its #line directives."""
    return _generated(cli, spec, template_dir) if template_dir else _built_in(cli, spec)


@functools.lru_cache(maxsize=None)  # the built-in sources serve every patch and check
def _built_in(cli, spec):
    return _generated(cli, spec, None)


def _generated(cli, spec, template_dir):
    env = dict(os.environ)
    env.pop("SCANFORGE_TEMPLATE_DIR", None)
    if template_dir:
        env["SCANFORGE_TEMPLATE_DIR"] = template_dir
    r = subprocess.run([cli, "gen", spec], env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"scanforge gen {spec} ({template_dir or 'built-in'}): {r.stderr.strip()}"
    return "\n".join(l for l in r.stdout.splitlines() if not l.startswith("#line"))


def spec_of(args):
    """The variant spec a check line's call runs: its flags, N and type, and its --spec."""
    shape = args[args.index("--shape") + 1].split(",")
    flag = lambda name: "1" if name in args else "0"
    keys = [f"op={'bwd' if '--backward' in args else 'fwd'}", f"dstate={shape[3]}",
            f"dtype={args[args.index('--dtype') + 1] if '--dtype' in args else 'fp32'}",
            f"z={flag('--z')}", f"D={flag('--D')}", f"delta_bias={flag('--delta-bias')}",
            f"softplus={flag('--softplus')}", f"B={'fixed' if '--fixed-B' in args else 'var'}",
            f"C={'fixed' if '--fixed-C' in args else 'var'}", f"deterministic={flag('--deterministic')}"]
    return ",".join(keys) + "," + args[args.index("--spec") + 1]


def check_lines(cli, checks, cand):
    """Each line's launch is one the candidate changes, and its other arguments run as a
    CPU check (small shapes), so that scanforge accepts them."""
    lines = [l for l in open(checks).read().splitlines() if l.strip() and not l.startswith("#")]
    assert lines, f"{checks} holds no check"
    for line in lines:
        args = shlex.split(line)
        assert "--spec" in args, f"{checks}: '{line}' names no launch (--spec)"
        spec = spec_of(args)
        assert generated(cli, spec, cand) != generated(cli, spec, None), \
            f"{checks}: '{line}': the candidate does not change {spec}: the check tests nothing new"
        i = args.index("--spec")
        del args[i:i + 2]
        r = subprocess.run([cli, "check", "--device", "cpu"] + args, capture_output=True, text=True)
        assert r.returncode == 0, f"{checks}: '{line}': {r.stderr.strip() or r.stdout.strip()}"
    return len(lines)


def main():
    cli = sys.argv[1]
    patches = sorted(glob.glob(os.path.join(ROOT, "bench", "candidates", "*.patch")))
    specs = sorted(set(tuned_specs()))
    for patch in patches:
        name = os.path.basename(patch)
        checks = patch[: -len(".patch")] + ".checks"
        assert os.path.exists(checks), f"{name}: no {os.path.basename(checks)} beside it"
        with tempfile.TemporaryDirectory() as tmp:
            cand = apply_patch(patch, tmp)
            changed = [s for s in specs if generated(cli, s, cand) != generated(cli, s, None)]
            assert changed, f"{name}: no shipped winner's kernel changes: the candidate is a no-op"
            count = check_lines(cli, checks, cand)
        print(f"{name}: applies; {len(changed)} of {len(specs)} winners' sources change; {count} checks, each of a changed launch")
    print(f"{len(patches)} candidates")


if __name__ == "__main__":
    main()
