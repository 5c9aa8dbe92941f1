#!/usr/bin/env python3
"""Times whole commands in rotation (A B C, then C B A, ...) and prints each one's median
[min..max] wall seconds and its ratio to the first command's median.

Usage: bench/ab_commands.py ROUNDS 'command A' 'command B' [...]
Commands run through the shell, output discarded; a command that fails stops the run.
hyperfine runs one command's rounds back to back; on the shared, noisy machines alternating is
how two builds are compared.
"""
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, commands = int(sys.argv[1]), sys.argv[2:]
    seconds = {c: [] for c in commands}
    for r in range(rounds):
        for command in commands if r % 2 == 0 else commands[::-1]:
            start = time.monotonic()
            subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL)
            seconds[command].append(time.monotonic() - start)
    first = statistics.median(seconds[commands[0]])
    for command in commands:
        s = seconds[command]
        m = statistics.median(s)
        print(f"{m:.3f} s [{min(s):.3f}..{max(s):.3f}] {m / first:.3f}x  {command}")


if __name__ == "__main__":
    main()
