#!/usr/bin/env python3
"""The slowest tests of a cargo nextest run, from its JUnit file.

usage: slowest-tests.py JUNIT_XML [N]   (N defaults to 10)

Prints N lines "<seconds>  <binary> <test>", slowest first, and the sum of
every test's time (the suite's work, which nextest spreads over its
threads: the run's wall time is what `make test` prints per step).
"""
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"slowest-tests: {path}: {e}", file=sys.stderr)
        return 1
    cases = [
        (float(c.get("time", "0")), c.get("classname", "?"), c.get("name", "?"))
        for c in root.iter("testcase")
    ]
    cases.sort(reverse=True)
    for seconds, binary, name in cases[:n]:
        print(f"{seconds:7.1f} s  {binary} {name}")
    total = sum(c[0] for c in cases)
    print(f"{len(cases)} tests, {total:.0f} s of test time in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
