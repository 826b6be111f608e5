"""test_ab_specs.py: bench/ab_specs.py takes each row's launch from a first (planned) run,
then times every row at that launch with the built-in templates and with each candidate
set in turn, and writes the files bench/ab_table.py reads. A stand-in `scanforge` on PATH
records how it was called and answers with small JSON files."""
import json
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "ab_specs.py")

# The stand-in: each row of --rows gets a variant (the spec given, else a planned one that
# differs per row) and a time that says which template set ran.
FAKE = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
rows = [l.strip() for l in open(args[args.index("--rows") + 1]) if l.strip()]
spec = args[args.index("--bwd-spec") + 1] if "--bwd-spec" in args else None
cand = os.environ.get("SCANFORGE_TEMPLATE_DIR", "")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"spec": spec, "cand": cand, "rows": rows, "bs": "--block-states" in args}) + "\n")
out = []
for line in rows:
    b, d, l, n, *rest = line.split(",")
    planned = "op=bwd,split=state,dstate=%s,threads=%d,items=8,channels=16,states=1,minblocks=0,pairs=0" % (n, 2 if d == "1536" else 4)
    variant = planned if spec is None else "op=bwd," + spec
    us = 100.0 if not cand else (90.0 if cand.endswith("fast") else 120.0)
    out.append({"batch": int(b), "dim": int(d), "seqlen": int(l), "dstate": int(n), "z": "z" in rest,
                "dtype": rest[-1], "ok": True, "backward": {"ok": True, "median_us": us, "variant": variant}})
json.dump({"rows": out}, open(args[args.index("--json") + 1], "w"))
'''


def main():
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "scanforge")
        with open(fake, "w") as f:
            f.write(FAKE.replace("PYTHON", sys.executable))
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        rows = os.path.join(tmp, "rows.txt")
        with open(rows, "w") as f:
            f.write("8,1536,2048,16,z,bf16\n4,4096,2048,16,z,bf16\n2,512,2048,128,fp32\n")
        log = os.path.join(tmp, "calls.log")
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"], FAKE_LOG=log)
        out_dir = os.path.join(tmp, "ab")
        run = subprocess.run([sys.executable, TOOL, rows, out_dir, "fast=/c/fast", "slow=/c/slow", "--rounds", "2",
                              "--block-states"], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        calls = [json.loads(l) for l in open(log)]
        assert all(c["bs"] for c in calls), calls
        plan, timed = calls[0], calls[1:]
        assert plan["spec"] is None and plan["cand"] == "" and len(plan["rows"]) == 3, plan
        # two launches (threads=2 for the 1536-channel row, threads=4 for the others), three builds, two rounds
        assert len(timed) == 2 * 3 * 2, len(timed)
        specs = {c["spec"] for c in timed}
        assert specs == {"split=state,threads=2,items=8,channels=16,states=1,minblocks=0,pairs=0",
                         "split=state,threads=4,items=8,channels=16,states=1,minblocks=0,pairs=0"}, specs
        assert [c["cand"] for c in timed[:6]] == ["", "", "/c/fast", "/c/fast", "/c/slow", "/c/slow"], timed[:6]
        for name, us in (("fast", 90.0), ("slow", 120.0)):
            for rnd in (1, 2):
                old = json.load(open(os.path.join(out_dir, name, f"old_bs_{rnd}.json")))["rows"]
                new = json.load(open(os.path.join(out_dir, name, f"new_bs_{rnd}.json")))["rows"]
                assert len(old) == len(new) == 3, (old, new)
                assert {r["backward"]["median_us"] for r in old} == {100.0}, old
                assert {r["backward"]["median_us"] for r in new} == {us}, new
        table = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "bench", "ab_table.py"),
                                os.path.join(out_dir, "fast"), "bs"], capture_output=True, text=True)
        assert table.returncode == 0 and table.stdout.count("0.900") == 3, table.stdout + table.stderr
    print("ok")


if __name__ == "__main__":
    main()
