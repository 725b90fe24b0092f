"""Write data/questions/vwo500_tail.jsonl from the CSV's structure (run once; the file is what ships).

Every naive CSV line reaches MiniLM's 256-token limit before its last columns: Priority (and Is Automated) are never
embedded, while the row-labelled chunk embeds "Priority: ...". So each question names a *group* of rows in tester's
words (an area of one module) plus a priority; gold = the rows of that group with that priority. Only groups whose
rows have more than one priority are used, so the priority is what picks the gold rows out of the group.

No "fact": a question has several gold rows, and with a fact compare judges by the fact alone (any chunk holding
it), so a fact "Critical" would count every critical row of every module as an answer. Judged by the gold rows
(strict: the chunk holds a gold row whole), a hit means the flow found that area's rows of that priority.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CSV = REPO / "data" / "VWO_500_Test_Cases.csv"
OUT = REPO / "data" / "questions" / "vwo500_tail.jsonl"

# (module as in "Verify <module> - ", topic regex on the part after " - ", tester's words for the group)
GROUPS: list[tuple[str, str, str]] = [
    ("Login", r"password", "the secret field of the sign-in screen"),
    ("Login", r"email", "the address field of the sign-in screen"),
    ("Login", r"session", "sign-in session handling"),
    ("Login", r"browser|Back|refresh", "browser navigation around signing in"),
    ("Login", r"cookie|storage|cache", "stored browser data on the sign-in screen"),
    ("Login", r"HTTPS|header|clickjacking|security policy|URL|console", "sign-in page hardening"),
    ("Login", r"Remember Me", "the keep-me-signed-in option"),
    ("Login", r"link|button", "links and buttons on the sign-in screen"),
    ("Login", r"accessible|ARIA|screen-reader|focus|keyboard", "sign-in accessibility"),
    ("Valid Login", r"password", "successful sign-in with various secrets"),
    ("Valid Login", r"email", "successful sign-in with unusual addresses"),
    (
        "Valid Login",
        r"2FA|SSO|OAuth|Google|Microsoft",
        "successful sign-in through a second factor or an identity provider",
    ),
    ("Valid Login", r"after", "signing in again after some account event"),
    ("Valid Login", r"cleared|cache|cookies|storage", "successful sign-in with wiped browser data"),
    ("Valid Login", r"Remember Me|session|trusted device", "staying signed in"),
    ("Invalid Login", r"email", "rejected sign-in with a malformed address"),
    ("Invalid Login", r"password", "rejected sign-in with a bad secret"),
    ("Invalid Login", r"2FA|SSO|OAuth|identity provider", "failed second-factor or identity-provider sign-in"),
    ("Invalid Login", r"reset", "failed recovery of a forgotten secret"),
    ("Invalid Login", r"account|organization", "sign-in refused because of the account's state"),
    ("Invalid Login", r"session|token|cookie", "refused sessions and tokens"),
    ("Invalid Login", r"API|JSON|content type|CSRF|fields", "bad requests to the authentication endpoint"),
    (
        "Invalid Login",
        r"injection|script|HTML|null|newline|tab|Unicode|long",
        "hostile or odd characters typed at sign-in",
    ),
    ("Invalid Login", r"URL|page", "opening protected pages without the right"),
    (
        "Invalid Login",
        r"network|unavailable|connection|rate limit|lockout|attempts|timeout",
        "outages and throttling during sign-in",
    ),
    ("Invalid Login", r"error|message|disclosure|exposure", "what the failure messages reveal"),
    ("Admin", r"user", "managing people in the administration console"),
    ("Admin", r"role", "granting and taking away roles in the administration console"),
    ("Admin", r"audit|login history", "activity records in the administration console"),
    ("Admin", r"configure|2FA|SSO|password", "organisation-wide security configuration"),
    ("Admin", r"workspace", "workspaces in the administration console"),
    ("Admin", r"API|integration", "third-party connections and keys in the administration console"),
    ("Admin", r"account|alert", "account locks and alerts in the administration console"),
    ("Admin", r"experiment|escalation", "governance of tests and escalations in the administration console"),
    ("Admin", r"view", "read-only screens of the administration console"),
    ("Logged In With Admin", r"user", "an administrator handling other people's accounts"),
    ("Logged In With Admin", r"role", "an administrator changing roles"),
    ("Logged In With Admin", r"2FA|password|session", "an administrator handling secrets and sessions"),
    ("Logged In With Admin", r"SSO|security|domain|IP", "an administrator's security settings"),
    ("Logged In With Admin", r"audit|analytics|lockout|login", "an administrator reading activity and sign-in records"),
    ("Logged In With Admin", r"workspace|organization", "an administrator's workspaces and organisation"),
    ("Logged In With Admin", r"experiment", "an administrator handling split tests"),
    ("Logged In With Admin", r"ticket", "an administrator working on help-desk tickets"),
    ("Support", r"submit|request", "raising a request with the help desk"),
    ("Support", r"attach|upload", "files added to a help-desk request"),
    ("Support", r"ticket", "help-desk ticket handling"),
    ("Support", r"article|knowledge", "the help articles"),
    ("Support", r"mask|script|block|restrict|access", "privacy and protection in the help desk"),
    ("Support", r"form|validate|errors", "filling in the help-desk form"),
    ("Support", r"chat|help|reply|comment|confirmation|reference", "talking to the help desk"),
    ("A/B Testing", r"variation", "experiment variants"),
    ("A/B Testing", r"allocation", "splitting visitor traffic between variants"),
    ("A/B Testing", r"goal", "conversion targets of an experiment"),
    ("A/B Testing", r"approv|reject|start|stop|pause|resume|archive", "an experiment's life cycle and sign-off"),
    ("A/B Testing", r"audit|access|unauthorized", "who may touch experiments and what is recorded"),
    ("A/B Testing", r"report|view|metrics|significance|zero|delayed", "experiment results"),
    ("A/B Testing", r"name|URL|draft|create", "setting up a new experiment"),
]

TEMPLATES = {
    "Critical": "Which tests about {area} are marked critical?",
    "High": "Which checks on {area} have high priority?",
    "Medium": "Which cases covering {area} are only of medium importance?",
}


def main() -> None:
    with CSV.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    lines = [
        "# Module area + priority: gold = that area's rows with that priority. Naive CSV lines hold Priority only past",
        "# MiniLM's 256-token limit; see scripts/make_tail_questions.py and tests/evaluation/test_tail_questions.py.",
    ]
    number = 0
    for module, topic, area in GROUPS:
        group = [
            r for r in rows if r[1].startswith(f"Verify {module} - ") and re.search(topic, r[1].split(" - ", 1)[1])
        ]
        priorities = sorted({r[12] for r in group}, key=list(TEMPLATES).index)
        if len(group) < 2 or len(priorities) < 2:
            continue
        for priority in priorities:
            number += 1
            gold = [r[0] for r in group if r[12] == priority]
            record = {
                "id": f"tail-{number:03d}",
                "question": TEMPLATES[priority].format(area=area),
                "gold": gold,
                "kind": "priority",
                "module": module,
                "topic": topic,
                "priority": priority,
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{number} questions -> {OUT}")


if __name__ == "__main__":
    main()
