#!/usr/bin/env python3
"""Summarises a `swift test` log: the slowest tests, the failed ones and the run's own total.

Reads what `swift test` printed (swift-testing's "✔ Test NAME passed after S seconds." lines, named by the suite
started around them, and XCTest's "Test Case 'Suite.test' passed (S seconds)." lines) from the file given, or
standard input. It only reads: the exit status of the test run is the caller's to keep (`make test` keeps it).

    scripts/slowest-tests.py /tmp/tandem-make-test.log [--top 10]
"""

import argparse
import re
import sys

SUITE_STARTED = re.compile(r"^◇ Suite (\S+) started\.")
SUITE_ENDED = re.compile(r"^[✔✘] Suite (\S+) (?:passed|failed) after")
TEST_ENDED = re.compile(
    r"^(?P<mark>[✔✘]) Test (?P<name>.+?)(?: with \d+ test cases?)? (?P<verdict>passed|failed) "
    r"after (?P<seconds>[0-9.]+) seconds")
RUN_ENDED = re.compile(r"^[✔✘] Test run with (\d+) tests? in (\d+) suites? (passed|failed) after ([0-9.]+) seconds")
XCTEST_ENDED = re.compile(r"^Test Case '(?P<name>[^']+)' (?P<verdict>passed|failed) \((?P<seconds>[0-9.]+) seconds\)")


def parse(lines):
    """Returns (tests, runs): tests as (seconds, "Suite/test", verdict), runs as swift-testing's summary lines."""
    tests, runs, suites = [], [], []
    for line in lines:
        line = line.rstrip("\n")
        if m := SUITE_STARTED.match(line):
            suites.append(m.group(1))
        elif m := SUITE_ENDED.match(line):
            if m.group(1) in suites:
                del suites[len(suites) - 1 - suites[::-1].index(m.group(1)):]
        elif m := RUN_ENDED.match(line):
            runs.append(line[2:])
        elif m := TEST_ENDED.match(line):
            name = m.group("name")
            if suites:
                name = f"{'/'.join(suites)}/{name}"
            tests.append((float(m.group("seconds")), name, m.group("verdict")))
        elif m := XCTEST_ENDED.match(line):
            tests.append((float(m.group("seconds")), m.group("name").replace(".", "/", 1), m.group("verdict")))
    return tests, runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", help="the test log (standard input if left out)")
    parser.add_argument("--top", type=int, default=10, help="how many of the slowest tests to list (default 10)")
    args = parser.parse_args()
    try:
        if args.log:
            with open(args.log, encoding="utf-8", errors="replace") as f:
                tests, runs = parse(f)
        else:
            tests, runs = parse(sys.stdin)
    except OSError as error:
        print(f"slowest-tests: cannot read {args.log}: {error.strerror}", file=sys.stderr)
        return 2
    if not tests:
        print("slowest-tests: no test durations in the log", file=sys.stderr)
        return 0
    total = sum(seconds for seconds, _, _ in tests)
    top = sorted(tests, key=lambda t: t[0], reverse=True)[: args.top]
    print(f"The {len(top)} slowest of {len(tests)} tests ({total:.0f} s in tests; the top {len(top)} "
          f"{sum(t[0] for t in top):.0f} s):")
    for seconds, name, verdict in top:
        print(f"  {seconds:8.2f} s  {name}{'' if verdict == 'passed' else '  (FAILED)'}")
    failed = [name for _, name, verdict in tests if verdict == "failed"]
    if failed:
        print(f"{len(failed)} failed: " + ", ".join(failed))
    for run in runs:
        print(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
