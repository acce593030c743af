//! State capture, store, diff and check on a real published database (Chinook, see
//! tests/fixtures/real/sqlite/NOTICE.md). Edits are made to copies; the rules that Chinook
//! does not exercise (tables without a key, WITHOUT ROWID, blobs, reals, invalid UTF-8)
//! use a small synthetic database, and those tests say so.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::Connection;
use trajkit_verify::state::check::{check, Expectation};
use trajkit_verify::state::diff::{diff, CollectDiff, HumanDiff};
use trajkit_verify::state::schema::read_schema;
use trajkit_verify::state::{capture, open_read_only, IgnoreSpec, Side, Store};

/// State digest of the unmodified Chinook database (pinned: the capture format is a contract).
const CHINOOK: &str = "e325ccf0c25d350b9d9404a9939b73a04c4d472abab5b6d33c125f002627c4a2";

fn chinook() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real/sqlite/Chinook_Sqlite.sqlite")
}

fn copy_chinook(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy(chinook(), &p).unwrap();
    p
}

fn no_ignore() -> IgnoreSpec {
    IgnoreSpec::default()
}

/// Every file under `root` with its length and modification time.
fn listing(root: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), (m.len(), m.modified().unwrap()));
            }
        }
    }
    out
}

/// The edits the diff and check tests look for.
fn edit(path: &Path) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "UPDATE Customer SET Email = 'luis.goncalves@example.com', Fax = NULL WHERE CustomerId = 1;
         DELETE FROM PlaylistTrack WHERE PlaylistId = 18;
         INSERT INTO Artist (ArtistId, Name) VALUES (276, 'Ada Lovelace Quartet');
         CREATE INDEX IFK_CustomerEmail ON Customer (Email);",
    )
    .unwrap();
}

#[test]
fn capture_reads_the_real_database_without_touching_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "Chinook_Sqlite.sqlite");
    let before = std::fs::read(&db).unwrap();
    let files_before = listing(dir.path());
    let cap = capture(std::slice::from_ref(&db), &no_ignore(), None).unwrap();
    assert_eq!(cap.digest, CHINOOK);
    assert_eq!((cap.stats.databases, cap.stats.tables, cap.stats.rows), (1, 11, 15607));
    let d = &cap.snapshot.databases[0];
    assert_eq!(d.name, "Chinook_Sqlite.sqlite");
    assert_eq!(d.schema.len(), 11, "11 CREATE INDEX statements");
    let track = d.tables.iter().find(|t| t.name == "Track").unwrap();
    assert_eq!((track.rows, track.key.as_slice()), (3503, ["TrackId".to_string()].as_slice()));
    let pt = d.tables.iter().find(|t| t.name == "PlaylistTrack").unwrap();
    assert_eq!(pt.key, ["PlaylistId", "TrackId"]);
    assert_eq!(
        pt.ddl,
        "CREATE TABLE [PlaylistTrack]([PlaylistId] INTEGER NOT NULL,[TrackId] INTEGER NOT NULL,CONSTRAINT [PK_PlaylistTrack] PRIMARY KEY([PlaylistId],[TrackId]),FOREIGN KEY([PlaylistId]) REFERENCES [Playlist]([PlaylistId]) ON DELETE NO ACTION ON UPDATE NO ACTION,FOREIGN KEY([TrackId]) REFERENCES [Track]([TrackId]) ON DELETE NO ACTION ON UPDATE NO ACTION)"
    );
    // Same bytes, same modification time, no journal or other file left beside it.
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(listing(dir.path()), files_before);
    // The database's name (its file name) is part of the state: a renamed copy differs.
    let renamed = copy_chinook(dir.path(), "chinook.db");
    assert_ne!(capture(&[renamed], &no_ignore(), None).unwrap().digest, CHINOOK);
}

#[test]
fn every_table_streams_in_key_order_without_a_sort() {
    let conn = open_read_only(&chinook()).unwrap();
    let (tables, _, _) = read_schema(&conn, &chinook(), &no_ignore()).unwrap();
    for t in &tables {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {}", t.select)).unwrap();
        let plan: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap().map(|r| r.unwrap()).collect();
        assert!(!plan.iter().any(|p| p.contains("TEMP B-TREE")), "{}: {plan:?}", t.name);
    }
    let pt = tables.iter().find(|t| t.name == "PlaylistTrack").unwrap();
    assert_eq!(
        pt.select,
        "SELECT \"PlaylistId\", \"TrackId\" FROM main.\"PlaylistTrack\" ORDER BY \"PlaylistId\", \"TrackId\", \"rowid\""
    );
}

#[test]
fn the_store_keeps_each_table_once_and_an_unchanged_capture_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "Chinook_Sqlite.sqlite");
    let store = Store::create(&dir.path().join("store")).unwrap();
    let first = capture(std::slice::from_ref(&db), &no_ignore(), Some(&store)).unwrap();
    assert_eq!((first.stats.new_objects, first.stats.new_snapshot), (11, true));
    assert_eq!(first.digest, CHINOOK);
    let files = listing(store.root());
    assert_eq!(files.len(), 12, "11 table captures and 1 snapshot; no temporary file left");
    let again = capture(std::slice::from_ref(&db), &no_ignore(), Some(&store)).unwrap();
    assert_eq!((again.stats.new_objects, again.stats.new_snapshot), (0, false));
    assert_eq!(listing(store.root()), files, "nothing written, nothing touched");
    // One changed table: one new table capture and one new snapshot.
    Connection::open(&db).unwrap().execute("UPDATE Genre SET Name = 'Bossa Nova' WHERE GenreId = 25", []).unwrap();
    let changed = capture(&[db], &no_ignore(), Some(&store)).unwrap();
    assert_eq!((changed.stats.new_objects, changed.stats.new_snapshot), (1, true));
    assert_eq!(listing(store.root()).len(), 14);
    // The stored snapshot reads back, verified, by a unique prefix.
    assert_eq!(store.snapshot(&CHINOOK[..8]).unwrap(), first.snapshot);
    // Stored rows come back in key order: the first rows of PlaylistTrack.
    let pt = first.snapshot.databases[0].tables.iter().find(|t| t.name == "PlaylistTrack").unwrap();
    let mut t = store.table(&pt.digest).unwrap();
    let first_rows: Vec<String> = (0..3).map(|_| format!("{:?}", t.rows.next_row().unwrap().unwrap())).collect();
    assert_eq!(first_rows, ["[Int(1), Int(1)]", "[Int(1), Int(2)]", "[Int(1), Int(3)]"]);
    assert_eq!(trajkit_verify::state::store::drain(&mut t.rows).unwrap(), 8712);
}

#[test]
fn capture_is_consistent_while_another_connection_writes_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "Chinook_Sqlite.sqlite");
    let writer = Connection::open(&db).unwrap();
    let mode: String = writer.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    writer.execute_batch("BEGIN IMMEDIATE; UPDATE Track SET Milliseconds = 0 WHERE TrackId <= 100;").unwrap();
    let bytes = std::fs::read(&db).unwrap();
    // The writer holds its write transaction: the capture sees the last committed state.
    let during = capture(std::slice::from_ref(&db), &no_ignore(), None).unwrap();
    assert_eq!(during.digest, CHINOOK);
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "the capture did not write the database");
    writer.execute_batch("COMMIT").unwrap();
    let after = capture(std::slice::from_ref(&db), &no_ignore(), None).unwrap();
    assert_ne!(after.digest, CHINOOK);
    let a = Side::live(&[chinook()], &no_ignore()).unwrap();
    let b = Side::live(&[db], &no_ignore()).unwrap();
    let summary = diff(&a, &b, &mut CollectDiff::default()).unwrap();
    assert_eq!((summary.updated, summary.inserted, summary.deleted), (100, 0, 0));
    drop(b);
    // With no other connection open (no -wal or -shm file), a WAL database still reads;
    // SQLite's reader recreates the empty companion files, the database is not written.
    drop(writer);
    let path = dir.path().join("Chinook_Sqlite.sqlite");
    let files = listing(dir.path());
    assert_eq!(files.len(), 1, "the writer's close removed -wal and -shm: {files:?}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(capture(std::slice::from_ref(&path), &no_ignore(), None).unwrap().digest, after.digest);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(listing(dir.path()).get(&path), files.get(&path), "same length and modification time");
    let wal = std::fs::metadata(dir.path().join("Chinook_Sqlite.sqlite-wal")).unwrap();
    assert_eq!(wal.len(), 0);
}

#[test]
fn diff_names_rows_by_key_with_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "edited.db");
    edit(&db);
    let mut out = Vec::new();
    let summary = diff(
        &Side::live(&[chinook()], &no_ignore()).unwrap(),
        &Side::live(std::slice::from_ref(&db), &no_ignore()).unwrap(),
        &mut HumanDiff { out: &mut out, show_db: false },
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "+ Artist.row[ArtistId=276] ArtistId=276 Name=\"Ada Lovelace Quartet\"\n\
         = Artist: 1 inserted, 0 deleted, 0 updated\n\
         ~ Customer.row[CustomerId=1] Fax: \"+55 (12) 3923-5566\" -> NULL, Email: \"luisg@embraer.com.br\" -> \"luis.goncalves@example.com\"\n\
         = Customer: 0 inserted, 0 deleted, 1 updated\n\
         - PlaylistTrack.row[PlaylistId=18,TrackId=597] PlaylistId=18 TrackId=597\n\
         = PlaylistTrack: 0 inserted, 1 deleted, 0 updated\n\
         schema index IFK_CustomerEmail created: CREATE INDEX IFK_CustomerEmail ON Customer(Email)\n"
    );
    assert_eq!((summary.inserted, summary.deleted, summary.updated, summary.schema_changes), (1, 1, 1, 1));
    // The same diff from stored snapshots (and mixed: snapshot against database).
    let store = Store::create(&dir.path().join("store")).unwrap();
    let a = capture(&[chinook()], &no_ignore(), Some(&store)).unwrap();
    let b = capture(std::slice::from_ref(&db), &no_ignore(), Some(&store)).unwrap();
    let mut from_store = CollectDiff::default();
    diff(&Side::stored(&store, &a.digest).unwrap(), &Side::stored(&store, &b.digest).unwrap(), &mut from_store)
        .unwrap();
    let mut mixed = CollectDiff::default();
    diff(&Side::stored(&store, &a.digest).unwrap(), &Side::live(&[db], &no_ignore()).unwrap(), &mut mixed).unwrap();
    assert_eq!(from_store.changes.len(), 4);
    assert_eq!(from_store.changes, mixed.changes);
    assert_eq!(
        from_store.changes[1].to_string(),
        r#"{"change":"update","columns":{"Email":{"after":"luis.goncalves@example.com","before":"luisg@embraer.com.br"},"Fax":{"after":null,"before":"+55 (12) 3923-5566"}},"db":"Chinook_Sqlite.sqlite","key":{"CustomerId":1},"kind":"row","table":"Customer"}"#
    );
}

fn expectation(text: &str) -> Expectation {
    Expectation::parse(text).unwrap()
}

#[test]
fn check_names_every_disallowed_collateral_effect() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "edited.db");
    edit(&db);
    let start = Side::live(&[chinook()], &no_ignore()).unwrap();
    let end = Side::live(std::slice::from_ref(&db), &no_ignore()).unwrap();
    let exp = expectation(
        r#"
[[expect]]
table = "Customer"
change = "update"
where = { CustomerId = 1 }
values = { Email = "luis.goncalves@example.com" }
"#,
    );
    let report = check(&exp, &start, &end).unwrap();
    assert!(!report.passed());
    assert_eq!(report.changes, 4);
    assert_eq!(
        report.failures(),
        [
            "disallowed collateral effect: Artist.row[ArtistId=276] inserted (ArtistId=276 Name=\"Ada Lovelace Quartet\")",
            "disallowed collateral effect: Customer.row[CustomerId=1] updated (Fax: \"+55 (12) 3923-5566\" -> NULL)",
            "disallowed collateral effect: PlaylistTrack.row[PlaylistId=18,TrackId=597] deleted (PlaylistId=18 TrackId=597)",
            "disallowed collateral effect: schema of index IFK_CustomerEmail created",
        ]
    );
    let full = expectation(
        r#"
[[expect]]
table = "Customer"
change = "update"
where = { CustomerId = 1 }
values = { Email = { contains = "@example.com" }, Fax = { is_null = true } }

[[expect]]
table = "PlaylistTrack"
change = "delete"
where = { PlaylistId = 18 }
count = 1

[[allow]]
table = "Artist"
change = "insert"
where = { ArtistId = { gt = 275 } }

[[allow]]
table = "IFK_CustomerEmail"
schema = true
"#,
    );
    let report = check(&full, &start, &end).unwrap();
    assert!(report.passed(), "{:?}", report.failures());
    assert_eq!(report.effects.iter().map(|e| e.matched).collect::<Vec<_>>(), [1, 1]);
    // An expected update without values covers every column it changed; allowances
    // without a change kind cover any change of their table.
    let any_update = expectation(
        "[[expect]]\ntable = \"Customer\"\nchange = \"update\"\nwhere = { CustomerId = 1 }\n\
         [[allow]]\ntable = \"Artist\"\n[[allow]]\ntable = \"PlaylistTrack\"\n\
         [[allow]]\ntable = \"IFK_CustomerEmail\"\nschema = true\n",
    );
    assert!(check(&any_update, &start, &end).unwrap().passed());
    // A missing effect with a near miss: the right row, the wrong value.
    let wrong = expectation(
        "[[expect]]\ntable = \"Customer\"\nchange = \"update\"\nwhere = { CustomerId = 1 }\nvalues = { Email = \"luis@example.com\" }\n",
    );
    let report = check(&wrong, &start, &end).unwrap();
    assert_eq!(
        report.failures()[0],
        "expected effect missing: expect #1 update of Customer where CustomerId = 1 with Email = \"luis@example.com\" (0 matching rows, at least 1 required); near miss: Customer.row[CustomerId=1] updated with Email = \"luis.goncalves@example.com\""
    );
    assert_eq!(report.violation_count, 4);
}

#[test]
fn ignored_tables_and_columns_are_left_out_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_chinook(dir.path(), "edited.db");
    edit(&db);
    let ignore = IgnoreSpec::new(["Customer.Fax", "Customer.Email", "PlaylistTrack"]);
    let cap = capture(&[chinook()], &ignore, None).unwrap();
    assert_eq!(cap.snapshot.ignore, ["Customer.Email", "Customer.Fax", "PlaylistTrack"]);
    let d = &cap.snapshot.databases[0];
    assert_eq!(d.ignored_tables, ["PlaylistTrack"]);
    assert_eq!(d.tables.len(), 10);
    let customer = d.tables.iter().find(|t| t.name == "Customer").unwrap();
    assert!(!customer.columns.iter().any(|c| c == "Fax" || c == "Email"));
    let mut sink = CollectDiff::default();
    let summary =
        diff(&Side::live(&[chinook()], &ignore).unwrap(), &Side::live(&[db], &ignore).unwrap(), &mut sink).unwrap();
    assert_eq!((summary.inserted, summary.deleted, summary.updated, summary.schema_changes), (1, 0, 0, 1));
    let err = capture(&[chinook()], &IgnoreSpec::new(["Track.TrackId"]), None).unwrap_err();
    assert!(err.to_string().ends_with("--ignore Track.TrackId: a primary key column cannot be ignored"), "{err}");
}

/// Synthetic: Chinook has no table without a key, no WITHOUT ROWID table, no blob, no
/// NOCASE key and no invalid UTF-8, so the canonical form of those is pinned here.
#[test]
fn canonical_table_capture_of_every_value_kind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kinds.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE log (at TEXT, level INTEGER, payload BLOB, score REAL);
         INSERT INTO log VALUES ('t2', 2, x'00ff', 0.1), ('t1', NULL, NULL, 1e300), ('t3', 3, NULL, -0.0);
         DELETE FROM log WHERE at = 't1';
         INSERT INTO log VALUES ('t4', 4, NULL, 2.0);
         CREATE TABLE kv (k TEXT PRIMARY KEY COLLATE NOCASE, v) WITHOUT ROWID;
         INSERT INTO kv VALUES ('b', 1), ('B2', 2), ('a', 'x'), ('é', 1.5);
         INSERT INTO kv VALUES (CAST(x'ff41' AS TEXT), 'bad utf-8');",
    )
    .unwrap();
    drop(c);
    let store = Store::create(&dir.path().join("store")).unwrap();
    let cap = capture(&[db], &no_ignore(), Some(&store)).unwrap();
    let read = |name: &str| {
        let t = cap.snapshot.databases[0].tables.iter().find(|t| t.name == name).unwrap();
        let mut text = String::new();
        zstd::stream::read::Decoder::new(std::fs::File::open(store.object_path(&t.digest)).unwrap())
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    assert_eq!(
        read("log"),
        "{\"columns\":[\"rowid\",\"at\",\"level\",\"payload\",\"score\"],\"ddl\":\"CREATE TABLE log(at TEXT,level INTEGER,payload BLOB,score REAL)\",\"ignored_columns\":[],\"key\":[\"rowid\"],\"kind\":\"trajkit-table/1\",\"order\":\"rowid\",\"table\":\"log\",\"without_rowid\":false}\n\
         [1,\"t2\",2,{\"blob\":\"00ff\"},0.1]\n\
         [3,\"t3\",3,null,0.0]\n\
         [4,\"t4\",4,null,2.0]\n"
    );
    // Keys in byte order whatever the declared collation (B2 < a < b < é < invalid UTF-8).
    assert_eq!(
        read("kv").lines().skip(1).collect::<Vec<_>>(),
        ["[\"B2\",2]", "[\"a\",\"x\"]", "[\"b\",1]", "[\"é\",1.5]", "[{\"text_hex\":\"ff41\"},\"bad utf-8\"]"]
    );
}

#[test]
fn databases_are_named_by_file_name_and_names_must_differ() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy_chinook(dir.path(), "music.db");
    std::fs::create_dir(dir.path().join("other")).unwrap();
    let b = copy_chinook(&dir.path().join("other"), "music.db");
    let err = capture(&[a.clone(), b], &no_ignore(), None).unwrap_err();
    assert!(err.to_string().ends_with("database name \"music.db\" is empty or given twice"), "{err}");
    let c = copy_chinook(dir.path(), "store.db");
    let two = capture(&[c, a], &no_ignore(), None).unwrap();
    let names: Vec<&str> = two.snapshot.databases.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["music.db", "store.db"]);
    assert_eq!(two.stats.rows, 2 * 15607);
    let missing = capture(&[dir.path().join("nope.db")], &no_ignore(), None).unwrap_err();
    assert!(missing.to_string().contains("nope.db: no such database file"), "{missing}");
}
