#!/usr/bin/env python3
"""Every Catch2 TEST_CASE name must survive catch_discover_tests: CMake splits a name at ';'
into several ctest entries, each running a filter that matches no test case, which Catch2
reports as success, so such a test never ran under ctest. Fails naming each offender."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent
# The name: one string literal, or adjacent literals split over lines.
CASE = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')

bad = []
count = 0
for path in sorted(ROOT.rglob("*.cc")):
    text = path.read_text(encoding="utf-8")
    for m in CASE.finditer(text):
        count += 1
        name = "".join(LITERAL.findall(m.group(1)))
        if ";" in name:
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {name!r} has ';' (ctest would never run it)")
for b in bad:
    print(b)
print(f"{count} test case names, {len(bad)} unusable by ctest")
sys.exit(1 if bad or count == 0 else 0)
