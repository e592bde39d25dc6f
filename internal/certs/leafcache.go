package certs

import "container/list"

// leafCache holds a Minter's leaves by canonical name, at most max of
// them: storing one more forgets the least recently served, so a flood of
// new names (each minted under MintRate) cannot grow it, and the names
// nodes keep using stay cached. The Minter's mutex guards it.
type leafCache struct {
	max    int
	byName map[string]*list.Element // Value: *leaf
	order  list.List                // front: most recently served
}

func newLeafCache(max int) *leafCache {
	c := &leafCache{max: max, byName: map[string]*list.Element{}}
	c.order.Init()
	return c
}

// get returns the leaf for name, marking it most recently served.
func (c *leafCache) get(name string) *leaf {
	e := c.byName[name]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*leaf)
}

// peek returns the leaf for name without marking it served.
func (c *leafCache) peek(name string) *leaf {
	if e := c.byName[name]; e != nil {
		return e.Value.(*leaf)
	}
	return nil
}

// put stores l under l.name as the most recently served, forgetting the
// least recently served leaf when the cache is full.
func (c *leafCache) put(l *leaf) {
	if e := c.byName[l.name]; e != nil {
		e.Value = l
		c.order.MoveToFront(e)
		return
	}
	if len(c.byName) >= c.max {
		if last := c.order.Back(); last != nil {
			c.remove(last.Value.(*leaf).name)
		}
	}
	c.byName[l.name] = c.order.PushFront(l)
}

func (c *leafCache) remove(name string) {
	if e := c.byName[name]; e != nil {
		c.order.Remove(e)
		delete(c.byName, name)
	}
}

func (c *leafCache) len() int { return len(c.byName) }

// each calls f for every leaf, most recently served first; f may remove
// the leaf it is given.
func (c *leafCache) each(f func(*leaf)) {
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		f(e.Value.(*leaf))
		e = next
	}
}
