package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// Dictionaries: earlier JSON of objects of the same apiVersion and kind, kept
// in the dicts bucket. Most of an object's first revision is the same text as
// other objects of its kind (field names, managedFields, the pod template), so
// a snapshot is stored as a delta against its kind's dictionary (or, when that
// is still poor, as a zstd frame compressed with it); deltas against the
// previous revision may copy from the dictionary too.
//
// A kind's first snapshot becomes its first dictionary. When a later snapshot
// of the kind compresses poorly against the newest dictionary (to more than a
// quarter of its size), a new dictionary is made: the old content followed by
// that JSON, its last dictMaxBytes kept. So a kind's dictionary learns the
// shapes its objects take (a pending pod, a running one) without growing for
// objects that merely differ in names and IDs. A kind has at most
// maxDictsPerKind dictionaries; dictionaries never change once written.
const (
	dictMaxBytes    = 32 << 10
	maxDictsPerKind = 8
	dictGrowMin     = 512 // JSON shorter than this never makes a new dictionary
	dictFormat      = 1

	// maxObjectBytes bounds what a zstd frame may decode to: an object's
	// JSON, which etcd keeps under 1.5 MiB.
	maxObjectBytes = 64 << 20
)

// kindKey is the dictionary key of a record's type: "apiVersion kind"; the
// pods recorded as protobuf have their own, "v1 Pod protobuf".
func kindKey(r *Record) string {
	if r.Proto {
		return r.APIVersion + " " + r.Kind + " protobuf"
	}
	return r.APIVersion + " " + r.Kind
}

// appendDict appends the dicts value of a dictionary.
func appendDict(dst []byte, kind string, content []byte) []byte {
	dst = append(dst, dictFormat)
	dst = appendString(dst, kind)
	return append(dst, content...)
}

// parseDict parses a dicts value; content aliases v.
func parseDict(v []byte) (kind string, content []byte, err error) {
	r := reader{b: v}
	if f := r.byte(); r.err == nil && f != dictFormat {
		return "", nil, fmt.Errorf("%w: dictionary format %d, this build reads %d", errValue, f, dictFormat)
	}
	kind = r.string()
	if r.err != nil {
		return "", nil, r.err
	}
	return kind, r.b, nil
}

// zstdWindow is the window of the zstd frames a Writer makes: room for a
// dictionary (one earlier object of the kind) and an object of the usual size.
const zstdWindow = 256 << 10

// kindDict is one dictionary, its delta index and its zstd encoder.
type kindDict struct {
	id      uint32
	kind    string
	content []byte

	indexOnce sync.Once
	index     *dictIndex
	encOnce   sync.Once
	enc       *zstd.Encoder
	encErr    error
}

// deltaIndex returns the dictionary's index, building it on first use.
func (kd *kindDict) deltaIndex() *dictIndex {
	kd.indexOnce.Do(func() { kd.index = newDictIndex(kd.content) })
	return kd.index
}

// encoder returns a zstd encoder with the dictionary, made on first use.
func (kd *kindDict) encoder() (*zstd.Encoder, error) {
	kd.encOnce.Do(func() {
		kd.enc, kd.encErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1),
			// Objects are kilobytes: a small window keeps each kind's
			// encoder at about 1 MiB instead of the default's 12 MiB of
			// history and tables.
			zstd.WithWindowSize(zstdWindow),
			zstd.WithLowerEncoderMem(true),
			zstd.WithEncoderDictRaw(kd.id, kd.content))
		if kd.encErr != nil {
			kd.encErr = fmt.Errorf("zstd encoder for dictionary %d: %w", kd.id, kd.encErr)
		}
	})
	return kd.enc, kd.encErr
}

// compressor keeps the dictionaries of one trace file. It caches the dicts
// bucket and is checked against it at the start of every write transaction.
// The encoding workers of a transaction share it: newest and grow are safe
// for concurrent use; sync, dict and flush run before and after them.
type compressor struct {
	mu      sync.Mutex
	kinds   map[string]*kindDict // the newest dictionary of each kind
	count   map[string]int       // dictionaries per kind
	lastID  uint32               // the highest dictionary id
	synced  bool
	pending []*kindDict // made in this transaction, not yet Put
}

func newCompressor() *compressor {
	return &compressor{kinds: map[string]*kindDict{}, count: map[string]int{}}
}

// reset forgets every dictionary, e.g. after a failed transaction that may
// have added some.
func (c *compressor) reset() {
	clear(c.kinds)
	clear(c.count)
	c.lastID = 0
	c.synced = false
	c.pending = nil
}

// sync loads the dictionaries of the file unless the cache is current.
func (c *compressor) sync(dicts *bolt.Bucket) error {
	c.pending = nil
	var last uint32
	if k, _ := dicts.Cursor().Last(); k != nil {
		if len(k) != 4 {
			return fmt.Errorf("%w: dictionary key %x", errValue, k)
		}
		last = binary.BigEndian.Uint32(k)
	}
	if c.synced && last == c.lastID {
		return nil
	}
	c.reset()
	err := dicts.ForEach(func(k, v []byte) error {
		if len(k) != 4 {
			return fmt.Errorf("%w: dictionary key %x", errValue, k)
		}
		kind, content, err := parseDict(v)
		if err != nil {
			return err
		}
		c.count[kind]++
		c.kinds[kind] = &kindDict{id: binary.BigEndian.Uint32(k), kind: kind, content: bytes.Clone(content)}
		return nil
	})
	if err != nil {
		c.reset()
		return err
	}
	c.lastID = last
	c.synced = true
	return nil
}

// add makes a new dictionary for kind, the kind's newest; flush writes it.
// c.mu is held.
func (c *compressor) add(kind string, content []byte) *kindDict {
	c.lastID++
	kd := &kindDict{id: c.lastID, kind: kind, content: content}
	c.kinds[kind] = kd
	c.count[kind]++
	c.pending = append(c.pending, kd)
	return kd
}

// dict makes sure kind has a dictionary, making json its first if it has
// none, and reports whether it did.
func (c *compressor) dict(kind string, json []byte) (made bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds[kind] != nil {
		return false
	}
	c.add(kind, bytes.Clone(json[:min(len(json), dictMaxBytes)]))
	return true
}

// newest returns the newest dictionary of kind.
func (c *compressor) newest(kind string) *kindDict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kinds[kind]
}

// grow makes a new dictionary for kind from its newest and json, unless the
// kind has its share of dictionaries; it returns nil then.
func (c *compressor) grow(kind string, json []byte) *kindDict {
	c.mu.Lock()
	defer c.mu.Unlock()
	kd := c.kinds[kind]
	if kd == nil || c.count[kind] >= maxDictsPerKind || len(json) < dictGrowMin {
		return nil
	}
	content := append(bytes.Clone(kd.content), json...)
	return c.add(kind, content[max(0, len(content)-dictMaxBytes):])
}

// flush writes the dictionaries made in this transaction.
func (c *compressor) flush(dicts *bolt.Bucket) error {
	for _, kd := range c.pending {
		if err := dicts.Put(binary.BigEndian.AppendUint32(nil, kd.id), appendDict(nil, kd.kind, kd.content)); err != nil {
			return err
		}
	}
	c.pending = nil
	return nil
}

// dictSet is what a reader needs of the dictionaries: their content for
// deltas and a zstd decoder that knows them all.
type dictSet struct {
	last    uint32 // the newest id
	content map[uint32][]byte
	zstd    *zstd.Decoder
}

// loadDicts reads every dictionary in dicts.
func loadDicts(dicts *bolt.Bucket) (*dictSet, error) {
	ds := &dictSet{content: map[uint32][]byte{}}
	opts := []zstd.DOption{zstd.WithDecoderMaxMemory(maxObjectBytes)}
	err := dicts.ForEach(func(k, v []byte) error {
		if len(k) != 4 {
			return fmt.Errorf("%w: dictionary key %x", errValue, k)
		}
		_, content, err := parseDict(v)
		if err != nil {
			return err
		}
		id := binary.BigEndian.Uint32(k)
		content = bytes.Clone(content)
		ds.content[id] = content
		ds.last = max(ds.last, id)
		opts = append(opts, zstd.WithDecoderDictRaw(id, content))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ds.zstd, err = zstd.NewReader(nil, opts...); err != nil {
		return nil, err
	}
	return ds, nil
}
