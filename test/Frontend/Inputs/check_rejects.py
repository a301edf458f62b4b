#!/usr/bin/env python3
"""Runs a compiler over every file of a directory and checks each is rejected cleanly: exit
status 1, at least one `error:` line on stderr, and no sign of a crash. Prints one line per
failure and exits 1 if there is any."""
import os
import subprocess
import sys


def main():
    tool, directory = sys.argv[1], sys.argv[2]
    files = sorted(os.listdir(directory))
    failures = []
    for name in files:
        path = os.path.join(directory, name)
        try:
            proc = subprocess.run([tool, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=60)
        except subprocess.TimeoutExpired:
            failures.append("%s: timed out" % name)
            continue
        err = proc.stderr.decode("utf-8", "replace")
        if proc.returncode != 1:
            failures.append("%s: exit status %d" % (name, proc.returncode))
        elif "error:" not in err:
            failures.append("%s: no error: line" % name)
        elif any(s in err for s in ("Stack dump", "Assertion", "Sanitizer", "PLEASE submit")):
            failures.append("%s: crash output" % name)
    for f in failures:
        print("FAIL " + f)
    print("%d files, %d failures" % (len(files), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
