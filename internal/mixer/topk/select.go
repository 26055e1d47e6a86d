package topk

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// heapMaxK is the largest k for which Row selects with a k-heap; larger k
// use quickselect.
const heapMaxK = 64

// kthLargestHeap scans the entries of z above −Inf keeping the k =
// len(heap) largest seen so far in a min-heap: n comparisons against the
// heap's root plus O(log k) per replacement (about k·ln(n/k) replacements
// for random order). It returns the k-th largest entry θ, the largest entry,
// and whether there were at least k entries (if not, θ is meaningless and
// the heap holds all of them).
func kthLargestHeap[F kernels.Float](z, heap []F) (theta, mx F, full bool) {
	k := len(heap)
	ninf := F(math.Inf(-1))
	n := 0
	i := 0
	for ; i < len(z) && n < k; i++ {
		if z[i] > ninf {
			heap[n] = z[i]
			n++
		}
	}
	if n < k {
		mx = ninf
		for _, v := range heap[:n] {
			mx = max(mx, v)
		}
		return ninf, mx, false
	}
	for j := k/2 - 1; j >= 0; j-- {
		siftDown(heap, j)
	}
	root := heap[0]
	for _, v := range z[i:] {
		if v > root {
			heap[0] = v
			siftDown(heap, 0)
			root = heap[0]
		}
	}
	mx = root
	for _, v := range heap {
		mx = max(mx, v)
	}
	return root, mx, true
}

// siftDown restores the min-heap property below position j.
func siftDown[F kernels.Float](h []F, j int) {
	n := len(h)
	for {
		c := 2*j + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if h[j] <= h[c] {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}

// KthLargest returns the k-th largest element of a (1 ≤ k ≤ len(a)) by
// quickselect with a median-of-three pivot and a three-way partition
// (expected O(len(a)), robust to ties). It reorders a. KthLargest panics if
// k is out of range.
func KthLargest[F kernels.Float](a []F, k int) F {
	if k < 1 || k > len(a) {
		panic("topk: KthLargest k out of range")
	}
	target := k - 1 // position in descending order
	lo, hi := 0, len(a)-1
	for lo < hi {
		x, y, z := a[lo], a[(lo+hi)/2], a[hi]
		pivot := max(min(x, y), min(max(x, y), z))
		// a[lo:lt] > pivot, a[lt:i] == pivot, a[gt+1:hi+1] < pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch v := a[i]; {
			case v > pivot:
				a[lt], a[i] = v, a[lt]
				lt++
				i++
			case v < pivot:
				a[i], a[gt] = a[gt], v
				gt--
			default:
				i++
			}
		}
		switch {
		case target < lt:
			hi = lt - 1
		case target > gt:
			lo = gt + 1
		default:
			return pivot
		}
	}
	return a[target]
}
