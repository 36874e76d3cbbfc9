package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BeginSession records the start of a recording session, assigns it the next
// session ID and returns it with that ID.
func (db *DB) BeginSession(s Session) (Session, error) {
	if db.readOnly {
		return s, fmt.Errorf("begin session in trace %q: %w", db.path, errReadOnly)
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		var last uint32
		if k, _ := b.Cursor().Last(); k != nil {
			if len(k) != 4 {
				return fmt.Errorf("%w: session key %x", errValue, k)
			}
			last = binary.BigEndian.Uint32(k)
		}
		s.ID = last + 1
		return putSession(b, s)
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
