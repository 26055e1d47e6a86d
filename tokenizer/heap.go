package tokenizer

// orderedHeap is a container/heap of T in the order less gives: the
// pending merges of a long piece (appendLongPiece) and the pair counts of
// training (Train).
type orderedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *orderedHeap[T]) Len() int           { return len(h.items) }
func (h *orderedHeap[T]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *orderedHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *orderedHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *orderedHeap[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
