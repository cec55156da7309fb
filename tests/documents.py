"""Small documents of every format, made in the test (no fixture file): a PDF written by hand, a
Word file by python-docx, an encrypted PDF by pypdf. Shared by tests/test_documents.py (fast) and
tests/test_ingest_formats.py (services)."""
from __future__ import annotations

import io
import zipfile


def pdf(pages: list[list[str]]) -> bytes:
    """A PDF whose pages hold these lines of text (Helvetica), with a correct cross-reference table."""
    objects: list[bytes] = []
    kids = []
    font = 3 + 2 * len(pages)
    for n, lines in enumerate(pages):
        page, stream = 3 + 2 * n, 4 + 2 * n
        kids.append(f"{page} 0 R")
        body = "BT /F1 11 Tf 72 760 Td 14 TL " + " ".join(
            "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '" for line in lines) + " ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {stream} 0 R "
                       f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        data = body.encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    head = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>".encode()]
    objects = head + objects + [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def encrypted(raw: bytes, password: str = "s3cret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(raw)).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(build) -> bytes:
    """A Word file made by `build(document)` with python-docx."""
    import docx as python_docx

    document = python_docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def zip_bomb(size: int) -> bytes:
    """A .docx-shaped zip whose document part unpacks to `size` bytes of zeros."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w") as part:
            chunk = b"\0" * 2**20
            for _ in range(size // len(chunk)):
                part.write(chunk)
    return out.getvalue()


MARKDOWN = """---
title: Dock manual
owner: ops
---
# Dock manual

## Starting the conveyor

Run the start script before the first shift:

```sh
# Start the belt
./start-belt --slow
# Check the sensors
```

then wait until the green lamp is lit.

## Upgrading the firmware

1. Stop the conveyor.

2. Back up the controller settings.

3. Install the new firmware.

## Keys

The following keys must have the specified meaning:

- `STOP` halts the belt at once
- `SLOW` halves the belt speed

## Glossary

100-999
: Dynamically allocated system users and groups.

## Notes

Forklifts must never carry people on their forks.[^1]

[^1]: This rule comes from the 2019 safety audit.

## Sizes

| Belt | Length |
|------|--------|
| North belt | runs forty metres from the dock to the store |
| South belt | runs twelve metres from the dock to the wrapper |
"""
