package store

import bolt "go.etcd.io/bbolt"

// Has reports whether the trace holds records of the object with uid. It
// reads two keys, so callers can check one object at a time (say, whether
// an audit event was imported already) without listing them all.
func (db *DB) Has(uid string) (bool, error) {
	var found bool
	err := db.view(func(tx *bolt.Tx) error {
		// uids also numbers the UIDs records only refer to; an object is
		// recorded when its number has a summary.
		num := tx.Bucket(bucketUIDs).Get([]byte(uid))
		found = num != nil && tx.Bucket(bucketObjects).Get(num) != nil
		return nil
	})
	if err != nil {
		return false, db.readError("look up "+uid, err)
	}
	return found, nil
}
