#!/usr/bin/env python3
"""sass_loops.py: the loops of one kernel in a cuobjdump -sass listing, with their length
and instruction mix, and per (t, n) when told how many a pass of the loop covers.

A static profile: counts what one pass through each loop body issues (the instructions
between a backward branch and its target), not what runs; branches inside a body count
whole. Also about how many shared-memory wavefronts a warp's pass costs (the L1 data
pipe, which bounds the split=state kernels: docs/perf.md v24). Good for comparing two
versions of a template before a GPU run (docs/perf.md says which loop is which for the
split=state kernels).

usage: sass_loops.py LISTING [--kernel NAME] [--per N]
  LISTING   output of `cuobjdump -sass FILE.cubin`
  --kernel  the function to read (default: the first in the listing)
  --per N   (t, n) pairs one pass of the outermost timed loop covers; adds a column
"""
import argparse
import collections
import re
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,8})\*/\s+(.*?)\s*;")
FUNCTION = re.compile(r"\s*Function : (\S+)")


def read_functions(path, header=FUNCTION, instruction=INSTRUCTION,
                   record=lambda found: (int(found.group(1), 16), found.group(2))):
    """{name: [record(match)]} of every function in the listing, in order: by default
    (address, text) of each instruction of a `cuobjdump -sass` listing; other listings
    give their own function header and instruction patterns (bench/live_registers.py)."""
    functions, current = {}, None
    with open(path) as listing:
        for line in listing:
            start = header.match(line)
            if start:
                current = functions.setdefault(start.group(1), [])
                continue
            found = instruction.match(line)
            if found and current is not None:
                current.append(record(found))
    return functions


def chosen_function(functions, name, path, tool, hint):
    """(name, code) of the function `name` (default: the first) among a listing's functions;
    exits with a message from `tool` when there is none (`hint`: what the listing should be)."""
    if not functions:
        sys.exit(f"{tool}: no function found in {path} ({hint})")
    name = name or next(iter(functions))
    if name not in functions:
        sys.exit(f"{tool}: no function {name} in {path}; it has {', '.join(functions)}")
    return name, functions[name]


def mnemonic(text):
    """The instruction's name with its modifiers ("LDS.128"), past any predicate."""
    words = text.split()
    return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


def opcode(text):
    return mnemonic(text).split(".")[0]


SHARED = ("LDS", "STS", "LDGSTS", "ATOMS", "LDSM")


def shared_wavefronts(text):
    """The L1 data-pipe wavefronts one warp's execution of this instruction costs in shared
    memory without bank conflicts (0 for other instructions): 128 bytes a wavefront, at
    least one; an access of 4 bytes or less a thread fills one, 8 bytes two, 16 bytes
    four. Conflicts add to it; 16-byte loads that many threads share can take less (the
    130M backward's averaged 3.5; docs/perf.md v24)."""
    parts = mnemonic(text).split(".")
    if parts[0] not in SHARED:
        return 0
    bits = max([int(p) for p in parts[1:] if p.isdigit()] + [32])
    return max(1, bits // 32)


def loops(instructions):
    """(first, last) index pairs of the bodies closed by a branch to an earlier address."""
    where = {address: i for i, (address, _) in enumerate(instructions)}
    found = []
    for i, (address, text) in enumerate(instructions):
        if opcode(text) != "BRA":
            continue
        target = re.search(r"0x([0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address and int(target.group(1), 16) in where:
            found.append((where[int(target.group(1), 16)], i))
    return sorted(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("listing")
    parser.add_argument("--kernel")
    parser.add_argument("--per", type=float)
    args = parser.parse_args()
    name, body = chosen_function(read_functions(args.listing), args.kernel, args.listing, "sass_loops.py",
                                 "is it cuobjdump -sass output?")
    print(f"{name}: {len(body)} instructions")
    for first, last in loops(body):
        mix = collections.Counter(opcode(text) for _, text in body[first:last + 1])
        length = last - first + 1
        per = f"  {length / args.per:6.1f} per (t, n)" if args.per else ""
        waves = sum(shared_wavefronts(text) for _, text in body[first:last + 1])
        waves_per = f" ({waves / args.per:.2f} per (t, n))" if args.per else ""
        top = " ".join(f"{op}:{count}" for op, count in mix.most_common(14))
        print(f"  loop {first:5d}..{last:5d}: {length:5d}{per}  shared wavefronts ~{waves}{waves_per}  {top}")


if __name__ == "__main__":
    main()
