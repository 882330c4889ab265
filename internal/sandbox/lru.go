package sandbox

import "container/list"

// lru is a least-recently-used map from Key to Result bounded both in
// entries and in the bytes of output it holds. The caller locks.
type lru struct {
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // front = most recently used; values are *lruEntry
	items      map[Key]*list.Element
}

type lruEntry struct {
	key Key
	res Result
}

// entryOverhead approximates the bytes an entry costs besides its output.
const entryOverhead = 256

func newLRU(maxEntries int, maxBytes int64) *lru {
	return &lru{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), items: map[Key]*list.Element{}}
}

func entrySize(k Key, r Result) int64 {
	return int64(len(k.TaskID)+len(r.Stdout)+len(r.Stderr)+len(r.Signal)) + entryOverhead
}

func (c *lru) len() int { return c.order.Len() }

func (c *lru) get(k Key) (Result, bool) {
	e, ok := c.items[k]
	if !ok {
		return Result{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).res, true
}

// put stores r under k and returns how many entries it evicted.
func (c *lru) put(k Key, r Result) int {
	if e, ok := c.items[k]; ok {
		old := e.Value.(*lruEntry)
		c.bytes += entrySize(k, r) - entrySize(k, old.res)
		old.res = r
		c.order.MoveToFront(e)
	} else {
		c.items[k] = c.order.PushFront(&lruEntry{key: k, res: r})
		c.bytes += entrySize(k, r)
	}
	evicted := 0
	for c.order.Len() > 1 && (c.order.Len() > c.maxEntries || c.bytes > c.maxBytes) {
		e := c.order.Back()
		ent := e.Value.(*lruEntry)
		c.order.Remove(e)
		delete(c.items, ent.key)
		c.bytes -= entrySize(ent.key, ent.res)
		evicted++
	}
	return evicted
}
