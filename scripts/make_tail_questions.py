"""Write data/questions/vwo500_tail.jsonl from the CSV's structure (run once; the file is what ships).

Every naive CSV line reaches MiniLM's 256-token limit before its last columns: Priority (and Is Automated) are never
embedded, while the row-labelled chunk embeds "Priority: ...". So each question names a *group* of rows in tester's
words plus a priority. A group is a family of sibling rows of one module (same action on email vs password, the
steps of a lifecycle, ...) named by what they share, never by what tells them apart; gold = the family's rows with
that priority. Only families whose rows have more than one priority are used, so the priority alone picks the gold.

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

# (module, exact topics of the family, tester's words for what the family's rows share)
FAMILIES: list[tuple[str, tuple[str, ...], str]] = [
    (
        "Login",
        ("email field visibility", "password field visibility"),
        "an input box being shown on the sign-in screen",
    ),
    (
        "Login",
        ("mobile email keyboard", "mobile password keyboard"),
        "the phone's on-screen keyboard for a sign-in input",
    ),
    ("Login", ("email autocomplete", "password autocomplete"), "browser autofill of a sign-in input"),
    ("Login", ("copy-and-paste email", "copy-and-paste password"), "pasting text into a sign-in input"),
    (
        "Login",
        ("browser Back after login", "browser Back after logout"),
        "the browser's return arrow around signing in or out",
    ),
    (
        "Login",
        ("cleared cookies", "cleared local storage", "cleared cache"),
        "opening the sign-in screen after wiping browser data",
    ),
    (
        "Login",
        ("Remember Me checkbox", "Remember Me persistence", "non-remembered session"),
        "the keep-me-signed-in option",
    ),
    ("Login", ("Forgot Password link", "registration link"), "the links under the sign-in form"),
    ("Valid Login", ("email with numbers", "password with numbers"), "digits inside the credentials of a good sign-in"),
    (
        "Valid Login",
        ("keyboard-entered credentials", "pasted credentials", "password-manager credentials"),
        "how the credentials get typed in for a good sign-in",
    ),
    (
        "Valid Login",
        ("enterprise SSO", "SAML SSO", "OAuth provider", "Google login", "Microsoft login"),
        "signing in successfully through an outside identity provider",
    ),
    (
        "Valid Login",
        ("login after failed attempt", "login after password reset", "login after account unlock"),
        "a good sign-in that follows an earlier problem",
    ),
    (
        "Valid Login",
        ("cleared browser cache", "cleared cookies", "cleared local storage"),
        "a good sign-in after wiping browser data",
    ),
    (
        "Invalid Login",
        ("empty email and password", "empty email", "empty password"),
        "leaving the sign-in inputs blank",
    ),
    (
        "Invalid Login",
        ("email containing only spaces", "password containing only spaces"),
        "a sign-in input holding nothing but blanks",
    ),
    (
        "Invalid Login",
        ("disabled account", "locked account", "deleted account", "unverified account"),
        "sign-in refused because of the account's state",
    ),
    (
        "Invalid Login",
        (
            "invalid 2FA code",
            "expired 2FA code",
            "reused 2FA code",
            "missing 2FA code",
            "invalid OAuth code",
            "OAuth state mismatch",
        ),
        "bad one-time or authorisation codes at sign-in",
    ),
    (
        "Invalid Login",
        ("SQL injection in email", "SQL injection in password"),
        "database-attack strings typed at sign-in",
    ),
    ("Invalid Login", ("script tag in email", "script tag in password"), "embedded JavaScript typed at sign-in"),
    (
        "Invalid Login",
        ("API missing email", "API missing password", "API unexpected fields"),
        "calling the sign-in endpoint with a wrong request body",
    ),
    (
        "Invalid Login",
        (
            "reset for unregistered email",
            "reset with malformed email",
            "reset with empty email",
            "expired reset token",
            "reused reset token",
            "old password after reset",
        ),
        "forgotten-secret recovery going wrong",
    ),
    (
        "Invalid Login",
        ("network timeout", "connection loss during submit", "authentication service unavailable"),
        "outages while signing in",
    ),
    (
        "Invalid Login",
        ("admin URL as standard user", "support URL as unauthorized user", "approval URL without permission"),
        "typing another role's page address directly",
    ),
    ("Admin", ("view user list", "export user list"), "the list of people in the administration console"),
    (
        "Admin",
        ("create user", "edit user", "deactivate user", "reactivate user", "restore user"),
        "account lifecycle actions in the administration console",
    ),
    (
        "Admin",
        (
            "configure session timeout",
            "configure password policy",
            "configure SSO",
            "configure notifications",
            "configure data retention",
            "configure domain restrictions",
            "configure IP restrictions",
        ),
        "the setup screens of the administration console",
    ),
    (
        "Admin",
        ("view organization settings", "edit organization settings"),
        "the company-wide settings page of the administration console",
    ),
    (
        "Admin",
        ("create workspace", "rename workspace", "archive workspace", "restore workspace", "manage workspace access"),
        "workspace actions in the administration console",
    ),
    (
        "Admin",
        ("view API access", "generate API credential", "revoke API credential"),
        "programmatic-access keys in the administration console",
    ),
    ("Admin", ("view security alerts", "acknowledge alert"), "security warnings in the administration console"),
    (
        "Admin",
        ("view experiment governance", "require experiment approval", "approve experiment", "reject experiment"),
        "overseeing split tests from the administration console",
    ),
    (
        "Logged In With Admin",
        ("invite user", "deactivate user", "reactivate user", "lock user", "unlock user"),
        "a signed-in administrator acting on someone's account",
    ),
    (
        "Logged In With Admin",
        (
            "view all users",
            "view user details",
            "view user roles",
            "view user status",
            "view last login",
            "view active sessions",
        ),
        "a signed-in administrator looking up people's information",
    ),
    (
        "Logged In With Admin",
        (
            "create workspace",
            "edit workspace",
            "archive workspace",
            "restore workspace",
            "add workspace member",
            "remove workspace member",
            "change workspace role",
        ),
        "a signed-in administrator's workspace actions",
    ),
    (
        "Logged In With Admin",
        ("view organization profile", "edit organization profile"),
        "a signed-in administrator and the company profile",
    ),
    (
        "Logged In With Admin",
        (
            "view security configuration",
            "view SSO configuration",
            "test SSO configuration",
            "save valid SSO configuration",
            "reject invalid SSO configuration",
            "update session timeout",
            "update password complexity",
        ),
        "a signed-in administrator's sign-on and security settings",
    ),
    (
        "Logged In With Admin",
        (
            "view experiment list",
            "view experiment details",
            "approve experiment",
            "reject experiment",
            "pause experiment",
            "resume experiment",
            "archive experiment",
        ),
        "a signed-in administrator handling split tests",
    ),
    (
        "Logged In With Admin",
        ("view login-success analytics", "view login-failure analytics", "view lockout events"),
        "a signed-in administrator's sign-in statistics",
    ),
    (
        "Support",
        (
            "submit login request",
            "submit password-reset request",
            "submit lockout request",
            "submit SSO request",
            "submit 2FA request",
        ),
        "the kinds of help requests a user can send",
    ),
    (
        "Support",
        ("attach image", "attach PDF", "reject unsupported attachment", "reject oversized attachment"),
        "files added to a help request",
    ),
    (
        "Support",
        (
            "search knowledge base",
            "open password article",
            "open SSO article",
            "open 2FA article",
            "open lockout article",
            "rate article",
            "report unhelpful article",
        ),
        "the self-help articles",
    ),
    (
        "Support",
        (
            "view ticket status",
            "comment on ticket",
            "close ticket",
            "reopen ticket",
            "block permanent reopen",
            "restrict ticket to owner",
            "block other-user ticket access",
            "record ticket audit history",
            "assign ticket",
            "reassign ticket",
            "change ticket severity",
            "export authorized tickets",
        ),
        "help-desk tickets",
    ),
    (
        "Support",
        ("handle support timeout", "handle upload interruption", "retry upload"),
        "help-desk hiccups such as slow replies or broken uploads",
    ),
    (
        "A/B Testing",
        (
            "create control variation",
            "create challenger variation",
            "create multiple variations",
            "edit variation",
            "duplicate variation",
            "delete challenger variation",
            "protect control variation",
        ),
        "the variants of a split test",
    ),
    (
        "A/B Testing",
        (
            "create experiment",
            "pause experiment",
            "resume experiment",
            "stop experiment",
            "archive experiment",
            "start approved experiment",
            "block unapproved start",
        ),
        "a split test's life cycle",
    ),
    (
        "A/B Testing",
        (
            "submit for approval",
            "admin approval",
            "admin rejection",
            "show rejection reason",
            "edit rejected experiment",
        ),
        "sign-off of a split test",
    ),
    (
        "A/B Testing",
        (
            "select conversion goal",
            "create click goal",
            "create form goal",
            "create revenue goal",
            "edit goal",
            "delete unused goal",
            "protect active goal",
        ),
        "the success targets of a split test",
    ),
    ("A/B Testing", ("block unauthorized access", "analyst read-only access"), "who may open split tests"),
]


TEMPLATES = {
    "Critical": "Among the tests about {area}, which are marked critical?",
    "High": "Among the checks on {area}, which have high priority?",
    "Medium": "Among the cases covering {area}, which are only of medium importance?",
}


def main() -> None:
    with CSV.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    lines = [
        "# Module area + priority: gold = that area's rows with that priority. Naive CSV lines hold Priority only past",
        "# MiniLM's 256-token limit; see scripts/make_tail_questions.py and tests/evaluation/test_tail_questions.py.",
    ]
    number = 0
    for module, topics, area in FAMILIES:
        topic = "^(?:" + "|".join(re.escape(t) for t in topics) + ")$"
        group = [
            r for r in rows if r[1].startswith(f"Verify {module} - ") and re.search(topic, r[1].split(" - ", 1)[1])
        ]
        priorities = sorted({r[12] for r in group}, key=list(TEMPLATES).index)
        if len(group) != len(topics):
            raise SystemExit(f"{module}: a family topic is not in the CSV: {topics}")
        if len(priorities) < 2:
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
