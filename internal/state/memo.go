package state

// Memo is a state machine's bounded memory of values it read from or wrote
// to its state, keyed by state key, so that Apply need not ask the store
// for them again (kv's applyCache, queue's applyMemo). What it holds must
// answer exactly as the state would: its owner updates it with every write
// of a key it may hold, and drops it (Reset) whenever the state is replaced
// (Resetter).
//
// It keeps two generations: a key is looked up in both and moved to the
// current one; when the current one has taken the budget in bytes (as
// charged by Put and Charge) it becomes the previous one and the old
// previous one is dropped. Memory stays under about two budgets.
type Memo[V any] struct {
	cur, old map[string]memoItem[V]
	used     int // approximate bytes taken by cur
	budget   int
}

// memoItem is one held value and the bytes it was charged.
type memoItem[V any] struct {
	v    V
	size int
}

// NewMemo returns an empty memo whose current generation may take budget
// bytes.
func NewMemo[V any](budget int) *Memo[V] {
	return &Memo[V]{cur: map[string]memoItem[V]{}, budget: budget}
}

// Reset forgets everything.
func (m *Memo[V]) Reset() { *m = *NewMemo[V](m.budget) }

// Get returns key's value if the memo holds it, moving it to the current
// generation.
func (m *Memo[V]) Get(key string) (V, bool) {
	if it, ok := m.cur[key]; ok {
		return it.v, true
	}
	it, ok := m.old[key]
	if ok {
		delete(m.old, key)
		m.put(key, it)
	}
	return it.v, ok
}

// Put holds v under key, charged size bytes. It reports whether the
// current generation was full and made the previous one: the values of the
// one before are then forgotten.
func (m *Memo[V]) Put(key string, v V, size int) (rotated bool) {
	return m.put(key, memoItem[V]{v: v, size: size})
}

func (m *Memo[V]) put(key string, it memoItem[V]) (rotated bool) {
	if m.used >= m.budget {
		m.old, m.cur, m.used = m.cur, map[string]memoItem[V]{}, 0
		rotated = true
	}
	if prev, ok := m.cur[key]; ok {
		m.used -= prev.size
	}
	m.cur[key] = it
	m.used += it.size
	return rotated
}

// Charge counts n more bytes taken by a value already held (one that grew
// in place).
func (m *Memo[V]) Charge(n int) { m.used += n }

// Delete forgets key.
func (m *Memo[V]) Delete(key string) {
	delete(m.cur, key)
	delete(m.old, key)
}

// Full reports whether the current generation has taken its budget.
func (m *Memo[V]) Full() bool { return m.used >= m.budget }

// Len returns how many keys the memo holds.
func (m *Memo[V]) Len() int { return len(m.cur) + len(m.old) }
