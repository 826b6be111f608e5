"""test_bound_table.py: bench/bound_table.py reads ncu's breakdown output and names, per
profiled launch, the unit nearest its peak; lines that are not utilisations (counts, n/a,
the bench's own output) are skipped."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "bound_table.py")

NCU = """==PROF== Connected to process 708
backward once;
  sf_scan_bwd_block_states (96, 8, 1)x(64, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    Section: Command line profiler metrics
    ---------------------------------------------------------------------- ----------- ------------
    l1tex__data_bank_reads.avg.pct_of_peak_sustained_active                          %        16.29
    l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_active                 %        91.37
    l1tex__lsuin_requests.avg.pct_of_peak_sustained_active                           %        23.03
    sm__inst_executed.avg.pct_of_peak_sustained_active                               %        49.09
    sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active                      %        28.81
    smsp__inst_executed_op_shfl.sum                                                            n/a
    l1tex__lsuin_requests.sum                                                     inst   41,135,616
  sf_scan_fwd_inner_saves (96, 8, 1)x(128, 1, 1), Context 1, Stream 13, Device 0, CC 9.0
    sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active                       %        48.40
    l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_active                 %        71.43
    sm__issue_active.avg.pct_of_peak_sustained_active                                %        57.76
"""


def run(args, text):
    return subprocess.run([sys.executable, TOOL] + args, input=text, capture_output=True, text=True)


def main():
    done = run([], NCU)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # one table per launch, in ncu's order, each highest first
    assert lines[0] == "== sf_scan_bwd_block_states", lines
    first = [l for l in lines[1:lines.index("== sf_scan_fwd_inner_saves")]]
    values = [float(l.split("%")[0]) for l in first if not l.startswith("bound")]
    assert values == sorted(values, reverse=True) and values[0] == 91.37 and len(values) == 5, first
    assert first[-1] == "bound: l1tex__data_pipe_lsu_wavefronts at 91.4% of its peak", first[-1]
    assert lines[-1] == "bound: l1tex__data_pipe_lsu_wavefronts at 71.4% of its peak", lines[-1]
    # --top keeps the highest N
    top = run(["--top", "1"], NCU).stdout.splitlines()
    assert top[1].strip().startswith("91.37%") and top[2].startswith("bound:"), top
    # nothing to read is an error, not an empty table
    empty = run([], "no metrics here\n")
    assert empty.returncode == 1 and "no pct_of_peak" in empty.stderr, empty
    print("bound_table: ok")


if __name__ == "__main__":
    main()
