"""demo: the demo corpus and users loaded, then the workstation opened. The handlers of the tree in
app/commands/demo.py."""
from __future__ import annotations

from r2k.core.services.operations.demo import load, loaded

from ..output import Text
from .ingest import ingest_lines


def demo_cmd(cli, args):
    # Loading adds users and documents: an admin's job. Once loaded, a rerun only opens the workstation.
    by = cli.actor if loaded(cli.ctx) else cli.admin("load the demo")
    summary = load(cli.ctx, by=by)
    user = getattr(args, "as_user", None) or summary["users"][0]["name"]
    if args.no_tui or getattr(args, "json", False):  # a JSON document, never a TUI
        people = ", ".join(f"{u['name']} ({u['role']}{': ' + ', '.join(u['horn_types']) if u['horn_types'] else ''})"
                           for u in summary["users"])
        corpus = summary["ingest"]
        if corpus["documents"] or corpus["skipped"]:
            lines = ["demo corpus:", *(f"  {line}" for line in ingest_lines(corpus))]
        else:
            lines = [f"demo corpus: already loaded, nothing added ({len(corpus['duplicates'])} documents)"]
        lines.append(f"users: {people}" + (f"; added now: {', '.join(summary['users_added'])}"
                                           if summary["users_added"] else "; all there already"))
        if summary.get("articles"):
            lines.append("articles: " + "; ".join(f"{a['id']} {a['title']!r} {a['state']}" for a in summary["articles"]))
        lines.append(f"open the workstation: r2k --as {user}")
        return Text(summary, "\n".join(lines))
    # Here, not at the top: the workstation (Textual and every screen: 0.5-1 s of import here)
    # only when it opens; `demo --no-tui` and `--json` never import it.
    from ..tui import run_tui

    run_tui(user=user)
    return None
