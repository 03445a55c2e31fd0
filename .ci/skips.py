"""Print every skipped test with its reason (the end of the CI log), from pytest's JUnit XML report.

With ``GAMEANIM_REQUIRE_HOST=1`` (CI found the ComfyUI tree), a skipped integration or browser test
is an error: those tests are the only check of the pack inside the real host.
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET


def main(report: str) -> int:
    skipped = []
    for case in ET.parse(report).iter("testcase"):
        mark = case.find("skipped")
        if mark is not None:
            name = f"{case.get('classname')}::{case.get('name')}"
            skipped.append((name, (mark.get("message") or mark.text or "").strip()))
    print(f"\n{len(skipped)} skipped test(s):")
    for name, reason in skipped:
        print(f"  {name}: {reason}")
    host = [name for name, _ in skipped if name.startswith("tests.integration.")]
    if host and os.environ.get("GAMEANIM_REQUIRE_HOST") == "1":
        print(f"error: {len(host)} integration/browser test(s) skipped although ComfyUI is present")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
