package kernel

// leaseHeap orders open reservations by lease deadline (a binary min-heap that
// keeps each reservation's index, so Settle removes it in O(log n)).
type leaseHeap []*reservation

func (h *leaseHeap) push(r *reservation) {
	r.heapIndex = len(*h)
	*h = append(*h, r)
	h.up(r.heapIndex)
}

// remove takes out the element at index i.
func (h *leaseHeap) remove(i int) {
	old := *h
	last := len(old) - 1
	if i != last {
		old.swap(i, last)
	}
	old[last].heapIndex = -1
	old[last] = nil
	*h = old[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h leaseHeap) less(i, j int) bool { return h[i].deadline < h[j].deadline }

func (h leaseHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

func (h leaseHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (h leaseHeap) down(i int) bool {
	start := i
	n := len(h)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
