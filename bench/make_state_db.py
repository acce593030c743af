#!/usr/bin/env python3
"""Builds the state benchmark databases (bench/state.sh): a ~1 GB contacts app database and
an edited copy of it. Deterministic (fixed seeds), Python 3 standard library only.

    python3 bench/make_state_db.py DIR [--mb 1000]

DIR/app.db     contacts (INTEGER PRIMARY KEY, ~330 bytes a row: text, a real, a 32-byte blob),
               contact_tags (WITHOUT ROWID, key (contact_id, tag)), audit_log (no key: rowid)
DIR/edited.db  a copy with 1 % of the contacts updated, 10,000 deleted, 10,000 inserted and
               1,000 tags added; audit_log untouched
"""

import os
import random
import shutil
import sqlite3
import sys

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


def contact(rng, i):
    first = rng.choice(WORDS).title()
    last = rng.choice(WORDS).title()
    notes = " ".join(rng.choice(WORDS) for _ in range(28))
    return (
        i,
        "%s %s %d" % (first, last, i),
        "%s.%s.%d@example.com" % (first.lower(), last.lower(), i),
        "+1 555 %04d %04d" % (i % 10000, (i * 7) % 10000),
        notes,
        round(rng.uniform(-1000, 100000), 2),
        rng.getrandbits(256).to_bytes(32, "little"),
        "2024-%02d-%02dT%02d:%02d:00Z" % (1 + i % 12, 1 + i % 28, i % 24, i % 60),
    )


def build(path, mb):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(
        """
        CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, phone TEXT,
                               notes TEXT, balance REAL, avatar BLOB, updated_at TEXT);
        CREATE INDEX contacts_by_email ON contacts(email);
        CREATE TABLE contact_tags (contact_id INTEGER NOT NULL, tag TEXT NOT NULL,
                                   PRIMARY KEY (contact_id, tag)) WITHOUT ROWID;
        CREATE TABLE audit_log (at TEXT, action TEXT, detail TEXT);
        """
    )
    rng = random.Random(7)
    # ~330 bytes per contact row plus index entries: rows for the target size.
    n = mb * 1_000_000 // 400
    db.execute("BEGIN")
    db.executemany("INSERT INTO contacts VALUES (?,?,?,?,?,?,?,?)", (contact(rng, i) for i in range(1, n + 1)))
    db.executemany(
        "INSERT INTO contact_tags VALUES (?, ?)",
        ((i, WORDS[(i * 31 + k) % len(WORDS)]) for i in range(1, n + 1, 3) for k in range(2)),
    )
    db.executemany(
        "INSERT INTO audit_log VALUES (?, ?, ?)",
        (("2024-01-01T00:00:%02dZ" % (i % 60), "import", "batch %d" % (i // 1000)) for i in range(n // 10)),
    )
    db.execute("COMMIT")
    db.close()
    return n


def edit(path, n):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    rng = random.Random(11)
    db.execute("BEGIN")
    db.executemany(
        "UPDATE contacts SET email = ?, balance = balance + 1 WHERE id = ?",
        (("changed.%d@example.com" % i, i) for i in range(1, n + 1, 100)),
    )
    db.executemany("DELETE FROM contacts WHERE id = ?", ((i,) for i in range(5, n + 1, n // 10_000)))
    db.executemany("INSERT INTO contacts VALUES (?,?,?,?,?,?,?,?)", (contact(rng, n + i) for i in range(1, 10_001)))
    db.executemany("INSERT OR IGNORE INTO contact_tags VALUES (?, 'bench')", ((i,) for i in range(2, 3002, 3)))
    db.execute("COMMIT")
    db.close()


def main():
    out = sys.argv[1]
    mb = int(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 1000
    os.makedirs(out, exist_ok=True)
    app = os.path.join(out, "app.db")
    n = build(app, mb)
    edited = os.path.join(out, "edited.db")
    shutil.copyfile(app, edited)
    edit(edited, n)
    print("%s: %d contacts, %d MB" % (app, n, os.path.getsize(app) // 1_000_000))


if __name__ == "__main__":
    main()
