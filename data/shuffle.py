#!/usr/bin/env python3
"""Deduplicate and shuffle lines with a fixed seed, reproducibly on any Python 3.

Reads byte lines from stdin, drops blank lines and duplicates, sorts them by
bytes, then shuffles with Fisher-Yates driven by splitmix64 (not `random`, whose
algorithms are not promised stable across versions), and writes them to stdout.
"""
import sys

MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0x6D656D6B76  # "memkv"
    lines = sorted({l.rstrip(b"\n") for l in sys.stdin.buffer} - {b""})
    state = seed
    for i in range(len(lines) - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)  # modulo bias < 2^-40 for these sizes; irrelevant here
        lines[i], lines[j] = lines[j], lines[i]
    out = sys.stdout.buffer
    for l in lines:
        out.write(l)
        out.write(b"\n")


if __name__ == "__main__":
    main()
