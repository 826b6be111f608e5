#!/usr/bin/env python3
"""live_registers.py: where a kernel's registers are live, from nvdisasm's life ranges.

A static profile (no GPU): a kernel's register count is set by its most crowded point,
and a register cap below it spills. This reads `nvdisasm --life-range-mode count` output
(a live-register count per instruction) for one function and prints its peak, how much of
the code runs near it, and the stretches of code where the count stays near the peak, with
their instruction mix: which part of the kernel (staging, the reverse pass, the sums)
decides the registers, and how far below the peak the rest of it stays.

usage: live_registers.py LISTING [--kernel NAME] [--within N]
  LISTING   output of `nvdisasm --life-range-mode count FILE.cubin`
  --kernel  the function to read (default: the first in the listing)
  --within  a stretch is code within N registers of the peak (default 16)"""
import argparse
import collections
import re

from sass_loops import chosen_function, opcode, read_functions

# nvdisasm's function labels ("name:"; its section labels start with a dot) and its
# instructions with the trailing life-range columns, the first being the live registers
LABEL = re.compile(r"^(\w+):\s")
INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,8})\*/\s+(.*?)\s*;\s*//\s*\|\s*(\d*)\s*\|")


def with_live(found):
    return int(found.group(1), 16), found.group(2), int(found.group(3) or 0)


def stretches(code, floor):
    """Runs of consecutive instructions whose live count is at least `floor`."""
    out, current = [], None
    for address, text, live in code:
        if live >= floor:
            if current is None:
                current = {"first": address, "count": 0, "peak": 0, "ops": collections.Counter()}
                out.append(current)
            current["last"] = address
            current["count"] += 1
            current["peak"] = max(current["peak"], live)
            current["ops"][opcode(text)] += 1
        else:
            current = None
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("listing")
    parser.add_argument("--kernel")
    parser.add_argument("--within", type=int, default=16)
    args = parser.parse_args()
    name, code = chosen_function(read_functions(args.listing, LABEL, INSTRUCTION, with_live), args.kernel,
                                 args.listing, "live_registers.py", "is it nvdisasm --life-range-mode count output?")
    peak = max(live for _, _, live in code)
    floor = peak - args.within
    near = sum(1 for _, _, live in code if live >= floor)
    print(f"{name}: {len(code)} instructions, at most {peak} registers live; "
          f"{near} instructions ({100.0 * near / len(code):.0f}%) within {args.within} of it")
    for run in stretches(code, floor):
        if run["count"] < 8:
            continue
        mix = " ".join(f"{op}:{n}" for op, n in run["ops"].most_common(6))
        print(f"  {run['first']:#07x}-{run['last']:#07x}  {run['count']:5d} instructions, peak {run['peak']:3d}  {mix}")


if __name__ == "__main__":
    main()
