// Package revision names one revision of an object as an informer notified
// it, so that test/bench can tell whether podtrace recorded every pod
// revision its baseline informer saw.
package revision

import (
	"fmt"
	"hash/fnv"
)

// Hash identifies a revision: the object's UID, its resourceVersion, and
// whether the notification was its deletion.
func Hash(uid, resourceVersion string, deleted bool) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%t", uid, resourceVersion, deleted)
	return h.Sum64()
}
