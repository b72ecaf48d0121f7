"""The documents and the 20-question evaluation set the evaluation e2e tests (REST, CLI, browser) share."""

from __future__ import annotations

import csv
import io

HARBOUR = """Harbour Office Annual Report

The harbour office manages moorings, pilots and the fish market of Port Elwyn.
Mooring fees rose by four percent this year after the quay repairs.
The harbour employs twelve pilots who guide ships through the northern channel.
The fish market opens at five o'clock every morning except Sunday.
The new crane on the east quay can lift forty tonnes.
The harbour master is Ingrid Solberg, appointed in 2019.
Dredging of the northern channel is planned for September 2027.
The harbour office is closed on public holidays.
"""
LIGHTHOUSE = """# Lighthouse maintenance log

The lighthouse keeper inspects the lamp every Tuesday at dawn.
The lens is cleaned with alcohol once a month by the keeper.
Storm damage to the lantern room was repaired in October.
The lighthouse stands 38 metres tall on Gull Point.
The foghorn sounds every 30 seconds in poor visibility.
The keeper's cottage was painted white in the spring.
The lighthouse was first lit in 1874.
Visitors may climb the tower on the first Saturday of each month.
"""
DOCUMENTS = {"harbour-report.txt": HARBOUR, "lighthouse-log.md": LIGHTHOUSE}

# (question, accepted answers or "unanswerable", document, kind, tags)
QUESTIONS = [
    ("How much did mooring fees rise this year?", "four percent", "harbour-report.txt", "percent", "fees"),
    ("How many pilots does the harbour employ?", "twelve", "harbour-report.txt", "number", ""),
    ("When does the fish market open?", "five o'clock", "harbour-report.txt", "date", "market"),
    ("How much can the new crane on the east quay lift?", "forty tonnes", "harbour-report.txt", "number", ""),
    ("Who is the harbour master?", "Ingrid Solberg", "harbour-report.txt", "name", ""),
    ("When is dredging of the northern channel planned?", "September 2027", "harbour-report.txt", "date", ""),
    ("What does the harbour office manage?", "moorings, pilots and the fish market|moorings", "harbour-report.txt",
     "list", ""),
    ("When was the harbour master appointed?", "2019", "harbour-report.txt", "date", ""),
    ("When does the lighthouse keeper inspect the lamp?", "every Tuesday at dawn|Tuesday", "lighthouse-log.md",
     "date", "keeper"),
    ("What is the lens cleaned with?", "alcohol", "lighthouse-log.md", "fact", "keeper"),
    ("When was the storm damage to the lantern room repaired?", "October", "lighthouse-log.md", "date", ""),
    ("How tall is the lighthouse?", "38 metres", "lighthouse-log.md", "number", ""),
    ("How often does the foghorn sound in poor visibility?", "every 30 seconds|30 seconds", "lighthouse-log.md",
     "number", ""),
    ("When was the lighthouse first lit?", "1874", "lighthouse-log.md", "date", ""),
    ("When may visitors climb the tower?", "first Saturday of each month", "lighthouse-log.md", "date", ""),
    ("What colour was the keeper's cottage painted?", "white", "lighthouse-log.md", "fact", "keeper"),
    ("Who won the Port Elwyn regatta in 1850?", "unanswerable", "", "unanswerable", "near-miss"),
    ("What is the salary of the lighthouse keeper?", "unanswerable", "", "unanswerable", "near-miss"),
    ("How many submarines are based at Gull Point?", "unanswerable", "", "unanswerable", ""),
    ("What is the capital of the harbour's twin town in Peru?", "unanswerable", "", "unanswerable", ""),
]


def set_csv() -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(["id", "question", "answers", "document", "kind", "tags"])
    for n, (question, answers, document, kind, tags) in enumerate(QUESTIONS, start=1):
        writer.writerow([f"h{n:02d}", question, answers, document, kind, tags])
    return out.getvalue().encode()


def malformed_csv() -> bytes:
    """Row 6 (the header is row 1) has no accepted answers."""
    lines = set_csv().decode().splitlines()
    fields = next(csv.reader([lines[5]]))
    fields[2] = ""
    out = io.StringIO(newline="")
    csv.writer(out).writerow(fields)
    lines[5] = out.getvalue().strip()
    return ("\n".join(lines) + "\n").encode()
