package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BeginSession records the start of a recording session, assigns it the next
// session ID and returns it with that ID. If an earlier session precedes
// it, the time between that one's end and this one's start is recorded as a
// GapRecorderDown gap: nothing was observed meanwhile.
func (db *DB) BeginSession(s Session) (Session, error) {
	if db.readOnly {
		return s, fmt.Errorf("begin session in trace %q: %w", db.path, errReadOnly)
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		var last uint32
		k, v := b.Cursor().Last()
		if k != nil {
			if len(k) != 4 {
				return fmt.Errorf("%w: session key %x", errValue, k)
			}
			last = binary.BigEndian.Uint32(k)
		}
		s.ID = last + 1
		if err := putSession(b, s); err != nil {
			return err
		}
		if k == nil {
			return nil
		}
		var prev Session
		if err := json.Unmarshal(v, &prev); err != nil {
			return fmt.Errorf("%w: session %d: %v", errValue, last, err)
		}
		g := Gap{Session: s.ID, Cause: GapRecorderDown, Start: prev.End(), End: s.Started}
		if prev.Open() {
			g.Detail = fmt.Sprintf("session %d was interrupted: no stop recorded, last sign of life %s", prev.ID, prev.End().UTC().Format(time.RFC3339))
		} else {
			g.Detail = fmt.Sprintf("session %d stopped", prev.ID)
		}
		if !g.End.After(g.Start) {
			return nil
		}
		return putGap(tx, g)
	})
	if err != nil {
		return s, fmt.Errorf("begin session in trace %q: %w", db.path, err)
	}
	return s, nil
}

// EndSession records when session id stopped.
func (db *DB) EndSession(id uint32, stopped time.Time) error {
	if db.readOnly {
		return fmt.Errorf("end session %d in trace %q: %w", id, db.path, errReadOnly)
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		v := b.Get(sessionKey(id))
		if v == nil {
			return fmt.Errorf("no session %d", id)
		}
		var s Session
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("%w: session %d: %v", errValue, id, err)
		}
		s.Stopped = stopped
		return putSession(b, s)
	})
	if err != nil {
		return fmt.Errorf("end session %d in trace %q: %w", id, db.path, err)
	}
	return nil
}

// stampAlive sets session id's Alive to t, in tx. An unknown session is not
// an error: the stamp is a hint.
func stampAlive(tx *bolt.Tx, id uint32, t time.Time) error {
	b := tx.Bucket(bucketSessions)
	v := b.Get(sessionKey(id))
	if v == nil {
		return nil
	}
	var s Session
	if err := json.Unmarshal(v, &s); err != nil {
		return fmt.Errorf("%w: session %d: %v", errValue, id, err)
	}
	if !t.After(s.Alive) {
		return nil
	}
	s.Alive = t
	return putSession(b, s)
}

// AddGap records a gap in observation.
func (db *DB) AddGap(g Gap) error {
	if db.readOnly {
		return fmt.Errorf("record gap in trace %q: %w", db.path, errReadOnly)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error { return putGap(tx, g) }); err != nil {
		return fmt.Errorf("record gap in trace %q: %w", db.path, err)
	}
	return nil
}

// Gaps returns the trace's gaps in the order they were recorded. A trace
// written before gaps were recorded has none.
func (db *DB) Gaps() ([]Gap, error) {
	var out []Gap
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGaps)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var g Gap
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("%w: gap %x: %v", errValue, k, err)
			}
			out = append(out, g)
			return nil
		})
	})
	if err != nil {
		return nil, db.readError("read gaps", err)
	}
	return out, nil
}

// putGap appends g to the gaps bucket, creating it in a trace written before
// gaps were recorded.
func putGap(tx *bolt.Tx, g Gap) error {
	b, err := tx.CreateBucketIfNotExists(bucketGaps)
	if err != nil {
		return err
	}
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, n), v)
}

// Sessions returns the trace's recording sessions in ID order.
func (db *DB) Sessions() ([]Session, error) {
	var out []Session
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var s Session
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("%w: session %x: %v", errValue, k, err)
			}
			out = append(out, s)
			return nil
		})
	})
	if err != nil {
		return nil, db.readError("read sessions", err)
	}
	return out, nil
}

func sessionKey(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

func putSession(b *bolt.Bucket, s Session) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return b.Put(sessionKey(s.ID), v)
}
