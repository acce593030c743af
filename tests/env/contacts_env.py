#!/usr/bin/env python3
"""contacts_env: a TEST environment for trajkit's replay and counterfactual tests.

It is not a product and models no real service. It implements the trajkit environment
adapter protocol (docs/environment-protocol.md) over one SQLite database (WAL mode) that
holds a tiny accounts/contacts app. Python 3 standard library only.

    python3 tests/env/contacts_env.py [--flaky]

--flaky makes the environment non-reproducible on purpose: rows written by actions are
stamped with the wall clock instead of the environment's logical clock, so two replays of
the same actions end in different states (the reset state stays reproducible).

Every process works in its own temporary directory, removed on `close` or end of input.
"""

import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

SCHEMA = """
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    balance_cents INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE contacts (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    email TEXT,
    phone TEXT,
    favorite INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX contacts_by_name ON contacts(name);
CREATE TABLE contact_tags (
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (contact_id, tag)
) WITHOUT ROWID;
CREATE TABLE audit_log (
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    detail TEXT
);
"""

PEOPLE = [
    ("Alan Turing", "alan@example.org", "+44 20 7946 0001"),
    ("Grace Hopper", "grace@example.org", "+1 202 555 0102"),
    ("Edsger Dijkstra", "edsger@example.org", None),
    ("Barbara Liskov", "barbara@example.org", "+1 617 555 0199"),
    ("Donald Knuth", "don@example.org", None),
]


class Env:
    def __init__(self, flaky):
        self.flaky = flaky
        self.dir = tempfile.mkdtemp(prefix="contacts-env-")
        self.path = os.path.join(self.dir, "contacts.db")
        self.db = None
        self.clock = 0

    def now(self):
        """Logical clock (reproducible), or the wall clock with --flaky."""
        if self.flaky:
            return "%.6f" % time.time()
        self.clock += 1
        return "2024-05-01T09:%02d:00Z" % self.clock

    def reset(self, seed):
        if self.db is not None:
            self.db.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)
        self.clock = 0
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        # A test environment needs no durability across power loss: no fsync per commit.
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        rng = random.Random(seed)
        people = PEOPLE[:3] if seed == 0 else rng.sample(PEOPLE, 3)
        with self.db:
            self.db.execute(
                "INSERT INTO accounts VALUES (1, 'me', 'Me', 12500), (2, 'sam', 'Sam Lee', 4000)"
            )
            for i, (name, email, phone) in enumerate(people, start=1):
                self.db.execute(
                    "INSERT INTO contacts VALUES (?, 1, ?, ?, ?, 0, ?)",
                    (i, name, email, phone, "2024-04-01T08:00:00Z"),
                )
            self.db.execute("INSERT INTO contact_tags VALUES (2, 'work')")
        return self.summary()

    def summary(self):
        tables = ["accounts", "contacts", "contact_tags", "audit_log"]
        return {t: self.db.execute("SELECT count(*) FROM " + t).fetchone()[0] for t in tables}

    def audit(self, action, detail):
        self.db.execute("INSERT INTO audit_log VALUES (?, ?, ?)", (self.now(), action, json.dumps(detail, sort_keys=True)))

    # Tools: each returns the observation (a tool-level error is an observation too).

    def search_contacts(self, query):
        rows = self.db.execute(
            "SELECT id, name, email FROM contacts WHERE name LIKE ? ORDER BY id", ("%" + query + "%",)
        ).fetchall()
        return [{"id": r[0], "name": r[1], "email": r[2]} for r in rows]

    def get_contact(self, contact_id):
        r = self.db.execute("SELECT id, name, email, phone, favorite FROM contacts WHERE id = ?", (contact_id,)).fetchone()
        if r is None:
            return {"error": "no contact %s" % contact_id}
        tags = [t[0] for t in self.db.execute("SELECT tag FROM contact_tags WHERE contact_id = ? ORDER BY tag", (r[0],))]
        return {"id": r[0], "name": r[1], "email": r[2], "phone": r[3], "favorite": bool(r[4]), "tags": tags}

    def create_contact(self, name, email=None, phone=None):
        with self.db:
            cur = self.db.execute(
                "INSERT INTO contacts (owner_id, name, email, phone, created_at) VALUES (1, ?, ?, ?, ?)",
                (name, email, phone, self.now()),
            )
            self.audit("create_contact", {"id": cur.lastrowid})
        return {"id": cur.lastrowid}

    def update_contact(self, contact_id, **fields):
        allowed = {k: v for k, v in fields.items() if k in ("name", "email", "phone", "favorite")}
        if not allowed:
            return {"error": "nothing to update"}
        with self.db:
            sets = ", ".join("%s = ?" % k for k in sorted(allowed))
            cur = self.db.execute(
                "UPDATE contacts SET %s WHERE id = ?" % sets, [allowed[k] for k in sorted(allowed)] + [contact_id]
            )
            if cur.rowcount == 0:
                return {"error": "no contact %s" % contact_id}
            self.audit("update_contact", {"id": contact_id, "fields": sorted(allowed)})
        return {"ok": True}

    def delete_contact(self, contact_id):
        with self.db:
            cur = self.db.execute("DELETE FROM contacts WHERE id = ?", (contact_id,))
            if cur.rowcount == 0:
                return {"error": "no contact %s" % contact_id}
            self.audit("delete_contact", {"id": contact_id})
        return {"ok": True}

    def add_tag(self, contact_id, tag):
        if self.db.execute("SELECT 1 FROM contacts WHERE id = ?", (contact_id,)).fetchone() is None:
            return {"error": "no contact %s" % contact_id}
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO contact_tags VALUES (?, ?)", (contact_id, tag))
            self.audit("add_tag", {"id": contact_id, "tag": tag})
        return {"ok": True}

    def transfer(self, to_username, amount_cents):
        with self.db:
            to = self.db.execute("SELECT id FROM accounts WHERE username = ?", (to_username,)).fetchone()
            if to is None:
                return {"error": "no account %s" % to_username}
            self.db.execute("UPDATE accounts SET balance_cents = balance_cents - ? WHERE id = 1", (amount_cents,))
            self.db.execute("UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?", (amount_cents, to[0]))
            self.audit("transfer", {"to": to_username, "amount_cents": amount_cents})
        return {"ok": True}

    TOOLS = ("search_contacts", "get_contact", "create_contact", "update_contact", "delete_contact", "add_tag", "transfer")

    def step(self, action):
        name = action.get("name")
        args = action.get("arguments") or {}
        if name not in self.TOOLS:
            observation = {"error": "unknown tool %s" % name}
        elif not isinstance(args, dict):
            observation = {"error": "arguments must be an object"}
        else:
            try:
                observation = getattr(self, name)(**args)
            except (TypeError, sqlite3.Error) as e:
                observation = {"error": str(e)}
        return {"observation": observation, "state": self.summary()}

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    env = Env(flaky="--flaky" in sys.argv[1:])
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                cmd = req.get("cmd")
                if cmd == "reset":
                    reply = {"state": env.reset(int(req.get("seed", 0)))}
                elif cmd == "step":
                    if env.db is None:
                        reply = {"error": "step before reset"}
                    else:
                        reply = env.step(req.get("action") or {})
                elif cmd == "capture":
                    reply = {"databases": [env.path]} if env.db is not None else {"error": "capture before reset"}
                elif cmd == "close":
                    env.close()
                    print(json.dumps({"closed": True}), flush=True)
                    return
                else:
                    reply = {"error": "unknown cmd %r" % cmd}
            except (ValueError, AttributeError) as e:
                reply = {"error": "bad request: %s" % e}
            print(json.dumps(reply, sort_keys=True), flush=True)
    finally:
        env.close()


if __name__ == "__main__":
    main()
