package store

// lru is a least-recently-used cache of values keyed by object UID, bounded by
// the bytes its values say they hold. It is not safe for concurrent use.
type lru[V any] struct {
	max, used int
	items     map[string]*lruItem[V]
	root      lruItem[V] // sentinel: root.next is the most recently used
	size      func(V) int
	// evicted, if set, is given each value the cache drops (evicted or
	// deleted, not replaced), for its memory to be used again.
	evicted func(V)
}

type lruItem[V any] struct {
	key        string
	val        V
	size       int
	prev, next *lruItem[V]
}

func newLRU[V any](maxBytes int, size func(V) int) *lru[V] {
	c := &lru[V]{max: maxBytes, items: make(map[string]*lruItem[V]), size: size}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

// get returns the value for key and marks it used.
func (c *lru[V]) get(key string) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.unlink(it)
	c.pushFront(it)
	return it.val, true
}

// peek returns the value for key without marking it used.
func (c *lru[V]) peek(key string) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	return it.val, true
}

// put stores val under key, evicting the least recently used values while
// the cache is over its budget. A value larger than the budget is not kept.
func (c *lru[V]) put(key string, val V) {
	size := c.size(val)
	if it, ok := c.items[key]; ok {
		c.used += size - it.size
		it.val, it.size = val, size
		c.unlink(it)
		c.pushFront(it)
	} else {
		it := &lruItem[V]{key: key, val: val, size: size}
		c.items[key] = it
		c.used += size
		c.pushFront(it)
	}
	for c.used > c.max && c.root.prev != &c.root {
		c.remove(c.root.prev)
	}
}

// remove drops one item.
func (c *lru[V]) remove(it *lruItem[V]) {
	c.unlink(it)
	delete(c.items, it.key)
	c.used -= it.size
	if c.evicted != nil {
		c.evicted(it.val)
	}
}

// delete drops the value for key, if any.
func (c *lru[V]) delete(key string) {
	if it, ok := c.items[key]; ok {
		c.remove(it)
	}
}

func (c *lru[V]) clear() {
	clear(c.items)
	c.used = 0
	c.root.prev, c.root.next = &c.root, &c.root
}

func (c *lru[V]) unlink(it *lruItem[V]) {
	it.prev.next = it.next
	it.next.prev = it.prev
}

func (c *lru[V]) pushFront(it *lruItem[V]) {
	it.prev = &c.root
	it.next = c.root.next
	c.root.next.prev = it
	c.root.next = it
}
