/*
Package store keeps podtrace's trace file: every observed revision of the
recorded objects, in one bbolt database, written in batches and read by
queries.

# Using it

The recorder writes through a Writer, which holds the file open between its
flushes only until a reader asks for it (trace.db.readers), so that
`podtrace diff` and `podtrace report` can read a trace that is being
recorded; it holds the trace's lock file (trace.db.lock) from NewWriter to
Close, so that it is the trace's only writer:

	w, err := store.NewWriter("trace.db", store.Options{Version: app.Version})
	s, err := w.BeginSession(store.Session{Server: url, Started: time.Now()})
	w.Add(recs...)           // from the informers' handlers
	n, err := w.Flush()      // every second, or when w.Pending() >= store.BatchSize;
	                         // while a reader holds the file, the records wait
	err = w.EndSession(s.ID, time.Now())
	err = w.Close()          // the last flush, then Compact

With Options.Retention, each flush then prunes the history of what is gone
from the cluster, for at most 100 ms, in small transactions (see Retention):

	w, err := store.NewWriter("trace.db", store.Options{
		Retention: store.Retention{Age: 7 * 24 * time.Hour, MaxBytes: 10 << 30},
	})
	prunes, err := db.Prunes() // what was pruned: readers say so

Readers open the file read-only; they wait up to Options.Timeout for a flush
in progress:

	db, err := store.Open("trace.db", store.Options{ReadOnly: true})
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod", Namespace: "ci", Name: "job-1"})
	revs, err := db.History(pods[0].UID)  // every revision, JSON byte for byte as recorded
	deps, err := db.Referring(pods[0].UID) // its Events, its dependents
	err = db.Scan(func(r store.Record) error { ... }) // the whole trace in Seq order

Open without ReadOnly creates a missing file and returns a DB that can Write
too; it holds the file's lock until Close, and refuses a trace that a live
Writer records into.

Errors say what to do next and match sentinels with errors.Is: fs.ErrNotExist
(no such file), ErrCorrupt (not a trace, damaged, or an empty file),
ErrNewerSchema (written by a newer podtrace), ErrLocked (another process
holds the file), ErrRecording (a live recorder holds the trace, for a second
writer), ErrNotFound (no object with that UID).

# The file

A trace is a bbolt database (https://pkg.go.dev/go.etcd.io/bbolt) of eight
top-level buckets, and a ninth, gaps, in traces written since gaps were
recorded; gone, in traces written since retention, and pruned, in traces
that retention pruned. All integers in keys are big-endian, so keys sort in
numeric order. Every UID the trace mentions has a 4-byte object number, given
in order of first mention; keys use the number, not the 36-byte UID, which
keeps the indexes small.

	meta      "schema"|"podtrace"|"created"|"id"|"json-bytes" -> text
	sessions  session ID (uint32)                    -> Session as JSON
	uids      UID (text)                             -> object number (uint32)
	objects   object number (uint32)                 -> object summary
	records   object number (uint32) + Seq (uint64)  -> record value
	time      Seq (uint64)                           -> object number (uint32)
	refs      referenced number + referring number   -> empty
	dicts     dictionary ID (uint32)                 -> dictionary
	gaps      sequence (uint64)                      -> Gap as JSON
	gone      deletion time (int64) + object number  -> empty
	pruned    sequence (uint64)                      -> Prune as JSON

# meta

Text values, readable as they are:

	schema      the layout version: "1", or "2" once a pod was recorded as
	            protobuf (SchemaVersion). A file whose schema is newer
	            than the reader's is refused with ErrNewerSchema.
	podtrace    the podtrace version that created the file
	created     when, RFC 3339 UTC
	id          128 random bits in hex, telling trace files apart
	json-bytes  the total size of the objects of every record written, as
	            handed to the store (JSON, or a pod's protobuf)
	gone-seq    the Seq up to which every deletion is in gone (below)

# sessions

One JSON Session per `podtrace record` run into the file (see record.go),
keyed by its ID, 1, 2, 3...; Stopped is zero while recording or if the run
crashed. Alive is the recorder's last sign of life: the Writer rewrites it
in the transaction of every flush, and at least every AliveEvery while idle.
A session without Stopped ends, for every reader, at Alive (Session.End),
never at the reader's clock: a trace says the same thing today and in a
year.

# gaps

Stretches of time in which the recorder did not observe the cluster, or one
kind of it, as JSON Gaps (see record.go), in the order they were recorded:
the time between two sessions (recorder-down, written by BeginSession), an
API server that did not answer, a watch that was restarted with a new list,
records dropped because the trace could not be written. A trace without the
bucket has no recorded gaps; writers create it when they first need it.

# gone and pruned

gone indexes the deletions of namespaced objects (an object whose last record
is Deleted or DeletedFinalStateUnknown) by the deletion's observed time, Unix
nanoseconds, then the object number: the objects gone longest come first,
for retention (Options.Retention, prune.go). Writers add an entry with each
deletion they write, and move gone-seq on when the index covered the file
before their batch; a trace written before the index, or by an older build
since, has a gone-seq behind the last Seq (or none), and a Writer with
retention indexes it again from the object summaries before it prunes.
Entries may be stale (an object recorded again after its deletion): pruning
checks each against its summary, and drops the entries of objects that go
with others.

pruned holds one JSON Prune (see record.go) per session and reason (age,
size), rewritten by each prune transaction: what was pruned, when, and the
deletions of the pods it covered. A pruned object leaves nothing behind:
its records, time entries, summary, gone entry and refs are deleted, and the
uids entries of the UIDs nothing refers to any more. The last record of the
file is never pruned, so that Seq still rises across the file.

Older builds read a pruned trace as it is (they ignore gone and pruned);
one that records into it leaves gone-seq behind, which the next pruning
Writer catches up on. So pruning did not change the schema.

# uids and objects

uids maps each UID to its number: the UID of every recorded object, and of
every object a record refers to (an Event's involvedObject, an owner) even if
it was not recorded. The bucket's sequence is the last number given.

objects holds one summary per recorded object, keyed by its number:

	byte     format, 1
	byte     flags: 0x01 the last record is a deletion
	string   UID
	string   apiVersion, kind, namespace, name (of the first record)
	uvarint  first Seq, last Seq
	varint   first observed, last observed (Unix nanoseconds; 0: unknown)
	uvarint  number of records
	uvarint  number of refs, then each ref as a string (UIDs, as first seen)

A string is a uvarint length and that many bytes. Varints are
encoding/binary's.

# records

One value per revision. The key, object number then Seq, keeps the revisions
of an object together and in order: an object's history is one range scan.
Seq is the record's position in the whole trace; it increases strictly across
the file. A value:

	byte     format: 1, or 2 when the payload makes the protobuf of a v1
	         Pod (k8s.io/api's Marshal, no envelope) instead of JSON
	byte     flags: bits 0-1 payload encoding (below)
	               bit 2 (0x04) refs listed
	               bit 3 (0x08) identity listed
	               bits 4-6 event type: 1 Initial, 2 Added, 3 Updated,
	                        4 Deleted, 5 DeletedFinalStateUnknown, 0 other
	               bit 7 (0x80) observed is relative
	uvarint  session ID
	varint   observed: Unix nanoseconds (0: unknown), or, if relative, the
	         nanoseconds since the previous revision's
	jstring  resourceVersion
	string   event type, only if its code is 0
	refs     if listed: uvarint count, then a jstring each. If not listed:
	         the previous revision's refs for a delta, none otherwise
	identity if listed: apiVersion, kind, namespace, name as strings. If not
	         listed: the summary's
	payload  the rest of the value: the object's JSON (or protobuf),
	         encoded

A jstring is either a string whose length is shifted left one bit (uvarint
n<<1, n bytes), or a pointer into the record's JSON (uvarint offset<<1|1,
uvarint n: the n bytes of the JSON at offset). UIDs and resourceVersions are
usually in the JSON, so they cost three or four bytes.

Payload encodings:

	0 raw         the JSON itself
	1 zstd        a zstd frame of the JSON, compressed with the raw
	              dictionary whose ID the frame header names
	2 delta       uvarint dictionary ID (0: none), then a delta against the
	              concatenation of the previous revision's JSON and that
	              dictionary
	3 dict-delta  uvarint dictionary ID, then a delta against that
	              dictionary alone

Encodings 0, 1 and 3 are snapshots: they decode without the previous
revision. The writer stores a delta when fewer than 31 deltas follow the last
snapshot: against the object's previous revision from its cache (a bounded
LRU by object, checked against the summary's last Seq, that forgets deleted
objects), or read back from the file when the cache let go of it; when
a delta exceeds an eighth of the JSON it is kept only if it is smaller than
a snapshot. So at least every 32nd revision of an object is a snapshot, and
a revision decodes from at most 32 values. A snapshot is a dict-delta; a
zstd frame only when the dict-delta is still longer than a quarter of the
JSON; the JSON itself if neither is shorter. Reads rebuild the JSON byte for
byte.

A pod of format 2 is encoded as any other object, with its protobuf where
the JSON would be (a delta's source is the previous revision as stored,
protobuf or JSON), and the pods' protobuf has dictionaries of its own (kind
"v1 Pod protobuf"). The recorder writes pods so because it receives their
protobuf: turning it into JSON was the largest cost recording added to the
informers' (see BENCHMARKS.md). A read turns it into the JSON the recorder
would have written: the typed decode of k8s.io/api and encoding/json, or
the faster transcoder package tracer registers (RegisterPodJSON), which
writes the same bytes. jstrings point into the protobuf, which holds UIDs
and resourceVersions as plain bytes too.

A delta (delta.go) is a uvarint target length, then operations, each a uvarint
h with n = h>>2: h&3 == 0 inserts the next n bytes of the delta; 1 copies n
bytes from the source at the cursor; 2 reads a zigzag varint d and copies n
bytes from cursor+d. The cursor starts at 0; an insert of n advances it by n,
a copy from s sets it to s+n.

# time

Seq to object number: the trace in the order it was recorded. Scan walks it
and looks each record up in records.

# refs

For each object O and each UID R its records refer to, the key is R's number
then O's, both uint32, with an empty value. The objects that refer to R (its
Events, its dependents) are one prefix scan; their histories follow from
their numbers.

# dicts

Dictionaries make snapshots small: earlier JSON of objects of the same
apiVersion and kind. A value:

	byte     format, 1
	string   "apiVersion kind", e.g. "v1 Pod"
	bytes    the dictionary: the rest of the value

A kind's first object becomes its first dictionary. A later snapshot whose
dict-delta exceeds a quarter of its JSON (say a running pod, when the
dictionary only knows pending ones) makes a new dictionary: the previous
one followed by that JSON, at most 32 KiB, at most 8 per kind. Deltas name
the newest dictionary of their kind. Dictionaries never change once
written.

# Reading a trace with the bbolt CLI

The bbolt command (go install go.etcd.io/bbolt/cmd/bbolt@v1.5.0) reads a
trace that no recorder holds (a copy, or one whose recorder stopped):

	bbolt buckets trace.db                   # dicts gaps gone meta objects records refs sessions time uids
	bbolt get trace.db meta schema           # 2 (1: no pod as protobuf)
	bbolt keys -f hex trace.db sessions      # 00000001 ...
	bbolt get --parse-format hex trace.db sessions 00000001      # the Session, as JSON
	bbolt get --format hex trace.db uids 2b9b4c3e-...            # the object's number: 0000002a
	bbolt get --parse-format hex --format hex trace.db objects 0000002a
	bbolt keys -f hex trace.db records       # 0000002a0000000000000007: object 42, Seq 7
	bbolt keys -f hex trace.db time          # 0000000000000007 ...
	bbolt check trace.db

Values of objects, records and dicts are binary, as above; podtrace decodes
them.

# Live recordings

bbolt lets one process write a file only while no other process has it
open: a writer takes an exclusive flock, a reader a shared one. A Writer
keeps the file open from one flush to the next while no reader wants it:
opening it for each flush made every flush map the file again, fault in
each page it touched and allocate its page buffers anew: 15-28% of the
store's CPU writing a 20,000-pod trace again (BenchmarkRewriteWriter), and
32 MiB of a recorder's peak RSS, though its whole CPU did not change
measurably (BENCHMARKS.md).

A reader asks for the file at the readers' file beside the trace, PATH +
".readers", which the Writer creates at NewWriter and removes at Close: Open
with ReadOnly takes a shared flock on it, if it exists, and keeps it until
Close. The Writer tries an exclusive flock on it, and lets go at once,
after each flush and every 50 ms in between; when it cannot take it, a
reader waits, and the Writer closes the file. From then on it opens the
file for each flush (open, write the batch in one transaction, close) and
keeps its records in memory while a reader holds the file, as long as a
reader holds the readers' file; so a reader waits about 50 ms, or one flush,
and a recording loses nothing while a report is being made. A reader that
does not know the readers' file (the bbolt CLI, a podtrace older than it)
waits for its timeout while a recorder runs: read a copy (`podtrace export`,
or `cp` while the recorder is stopped). Where flock(2) is missing, the
Writer closes the file after every flush.

The Writer's caches (the last revision of each object, the dictionaries)
survive between flushes and are checked against the file each time it opens
it: the cached revision must be the object's last in the file, by Seq, for a
delta to be written against it; else the writer reads the last revision back
from the file.

A trace has one writer at a time. NewWriter takes an exclusive, non-blocking
flock on the lock file beside the trace, PATH + ".lock", and keeps it open
until Close, which removes it (if it is still the file it locked). The lock
file holds who records, as JSON (see Lease):

	{"pid":1234,"host":"h","since":"2026-12-02T06:00:00Z","version":"v0.1.0"}

A second NewWriter, an Open for writing (`podtrace import`) or Compact of
the trace fails with ErrRecording, naming that recorder. The kernel drops
the flock of a process that dies, so the lock file a `kill -9` leaves behind
is taken over by the next recorder. Readers never touch the lock file, except
Recorder, which tries a shared flock on it to tell a session with no stop
time that is still recording (the lock is held) from one that was
interrupted (it is not, or there is no lock file). The bbolt file's own flock
is separate: the Writer holds it while it has the file open.

Before a Writer adds to an existing file, it checks it, reading it
read-only: an empty file is refused (a missing one is created), and so is a
file that is not a trace, and a trace that bbolt's consistency check (bbolt
check, DB.Check) finds damaged, with ErrCorrupt; the file is left byte for
byte as it was and nothing is left beside it. The check reads every page;
if it has not finished within Options.CheckTimeout (20 s), NewWriter returns
and tells Options.Warn, and the Writer writes nothing until the check is
over (Flush keeps the records), nothing at all if it finds damage. Compact
turns bbolt's panics on a damaged page into ErrCorrupt, removes its
.compact copy and leaves the original as it was.

# Schema versions

SchemaVersion changes when a build writes something an older build cannot
read; the byte at the start of each value lets an encoding change within a
schema. Schema 2 (pods as protobuf, value format 2) is set by the first
write of such a record, so a trace of JSON alone stays readable by builds
of schema 1. Open refuses a trace whose schema is newer than SchemaVersion with
ErrNewerSchema.
*/
package store
