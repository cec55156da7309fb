"""audit: the signed event log verified and anchored. The command tree; the handlers are
app/handlers/audit.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    audit = commands.group("audit", "the signed event log")
    verify = audit.command("verify", "recompute every hash chain and signature under the trusted keys (the data "
                           "dir's own, and R2K_TRUSTED_KEYS: a file of one public key a line, hex or base64, # "
                           "for comments); name the first broken link, and every chain cut short or gone since "
                           "a checkpoint", "audit:audit_verify")
    verify.add_argument("--anchor", metavar="FILE",
                        help="a checkpoint saved from `r2k audit anchor --json` (default: the newest trusted "
                             "checkpoint in the database and the data dir)")
    audit.command("anchor", "write a checkpoint of the events so far, if any are new, and print the latest: "
                  "keep it off this host, to check the log against later", "audit:audit_anchor")
