package data

// RetrievalScores scores an embedder on pairs: texts[i] and positives[i]
// are unit vectors; in groups of group consecutive pairs, each text ranks
// the group's positives by dot product (cosine similarity). It returns
// recall@1, the share of texts whose own positive ranks first, and the
// mean reciprocal rank of the own positive (ties rank it first).
func RetrievalScores(texts, positives [][]float32, group int) (recall1, mrr float64) {
	n := len(texts)
	if n == 0 {
		return 0, 0
	}
	dot := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	for g := 0; g < n; g += group {
		hi := min(g+group, n)
		for i := g; i < hi; i++ {
			own, rank := dot(texts[i], positives[i]), 1
			for j := g; j < hi; j++ {
				if j != i && dot(texts[i], positives[j]) > own {
					rank++
				}
			}
			if rank == 1 {
				recall1++
			}
			mrr += 1 / float64(rank)
		}
	}
	return recall1 / float64(n), mrr / float64(n)
}
