"""How light the house is: raw SQL call sites and database-vendor branches in app code, now
against the commit the lighter-house work started from, with the floor plan and ruff.

    .venv/bin/python bench/house_counts.py [--base 1188d8f] [--list]

App code is every .py file but migrations, tests, benches and the Python client. Counted:

- raw SQL call sites: lines calling a cursor's `execute`, `executemany` or `copy`, or
  `RawSQL`, `.raw(` or `.extra(`, outside lib/bulk.py (the one module of bulk COPY the
  house keeps on purpose);
- vendor branches: lines reading `connection.vendor` (or any `.vendor` of a connection).

Targets (issue 24): each count down by at least half from the base; `python3
../shared/tools/house.py` at 0 circles, 0 upward imports, 0 private reaches, 0 files over
700 lines (skipped when ../shared is absent); `ruff check .` and `ruff format --check .` clean.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "1188d8f"  # main when the lighter-house issue was taken up
RAW_SQL = r"(cursor\.(execute|executemany|copy)\(|\.execute(many)?\(\s*(f?\"|f?'|sql|statement|query)|RawSQL\(|\.raw\(|\.extra\()"
VENDOR = r"\.vendor\b"
SKIPPED = ("/migrations/", "tests/", "bench/", "clients/")


def _app_file(path: str) -> bool:
    return path.endswith(".py") and not any(part in path if part.startswith("/") else path.startswith(part) for part in SKIPPED)


def matches(ref: str | None, pattern: str, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """`path:line: text` of every app-code line matching `pattern`, in the working tree or at `ref`."""
    command = ["git", "grep", "-n", "-E", pattern]
    if ref:
        command.append(ref)
    command += ["--", "*.py"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        path = line.split(":", 2)[1] if ref else line.split(":", 1)[0]
        if _app_file(path) and path not in exclude:
            found.append(line)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE, help=f"the commit to compare with (default {BASE})")
    parser.add_argument("--list", action="store_true", help="list the lines counted now")
    args = parser.parse_args()
    verdicts = []
    for label, pattern, exclude in (("raw SQL call sites", RAW_SQL, ("lib/bulk.py",)), ("connection.vendor branches", VENDOR, ())):
        before, now = matches(args.base, pattern, exclude=exclude), matches(None, pattern, exclude=exclude)
        ok = len(now) * 2 <= len(before)
        verdicts.append(ok)
        print(f"{label}: {len(now)} now, {len(before)} at {args.base} (target: at most {len(before) // 2})  {'PASS' if ok else 'MISS'}")
        if args.list:
            for line in now:
                print("   ", line[:160])
    house = ROOT.parent / "shared" / "tools" / "house.py"
    if house.exists():
        out = subprocess.run([sys.executable, str(house)], cwd=ROOT, capture_output=True, text=True).stdout.strip().splitlines()
        summary = out[-1] if out else ""
        ok = bool(re.search(r"0 circles, 0 imports up the floors, 0 private reaches across apps, 0 files over 700 lines", summary))
        verdicts.append(ok)
        print(f"house: {summary}  {'PASS' if ok else 'MISS'}")
    else:
        print("house: ../shared/tools/house.py is absent, not checked")
    ruff = Path(sys.executable).with_name("ruff")
    for command in (["check", "."], ["format", "--check", "."]):
        done = subprocess.run([str(ruff), *command], cwd=ROOT, capture_output=True, text=True)
        tail = (done.stdout.strip().splitlines() or [""])[-1]
        verdicts.append(done.returncode == 0)
        print(f"ruff {' '.join(command)}: {tail}  {'PASS' if done.returncode == 0 else 'MISS'}")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
