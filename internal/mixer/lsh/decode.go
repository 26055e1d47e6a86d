package lsh

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// lshState is one causal sequence's decoding state. The windows are those
// of a Forward over max positions with Pass.Seed seed: NB buckets from max,
// the rotations from seed. Since each bucket is chunked on its own (see the
// package doc), a token's chunk is fixed by the earlier tokens of its
// bucket, so the state keeps, per round and head, every bucket's positions
// in order, and every position's unit key and value.
type lshState[F kernels.Float] struct {
	n, max, nb int
	rot        [][]F       // [R·H][dh·NB/2]
	lists      [][][]int32 // [R·H][bucket] positions, ascending
	k, v       []F         // [n, D]: unit keys (per head), values
	// Work (not counted in Bytes).
	qk, vn, att, proj, z []F
	mark                 []int // mark[j] == stamp when j is in the current (query, head)'s windows
	keys                 []int
}

func (s *lshState[F]) Len() int { return s.n }

// Bytes is the state's memory: keys, values, bucket lists and rotations.
func (s *lshState[F]) Bytes() int64 {
	var z F
	f := int64(unsafe.Sizeof(z))
	b := f * int64(cap(s.k)+cap(s.v))
	for i := range s.lists {
		b += f * int64(len(s.rot[i]))
		for _, l := range s.lists[i] {
			b += 4 * int64(cap(l))
		}
	}
	return b
}

// StateBytes implements mixer.StateSizer: the rotations, and the keys,
// values and bucket lists of n positions with the slack of append's
// growth (taken as twice the lists, a quarter more keys and values).
func (m *LSH[F]) StateBytes(maxLen, n int) int64 {
	var z F
	f := int64(unsafe.Sizeof(z))
	rounds := int64(m.nHashes * m.h)
	return rounds*f*int64(m.dh*m.NBuckets(maxLen)/2) + f*2*int64(m.d)*int64(n+n/4+64) + rounds*4*2*int64(n+m.NBuckets(maxLen))
}

// NewState returns the decoding state of a causal sequence of at most
// maxLen positions, hashed as a Forward over maxLen positions with
// Pass.Seed seed.
func (m *LSH[F]) NewState(maxLen int, seed uint64) mixer.State {
	s := &lshState[F]{max: maxLen, nb: m.NBuckets(maxLen)}
	for r := range m.nHashes {
		for h := range m.h {
			rot := make([]F, m.dh*s.nb/2)
			m.Rotation(rot, seed, r, h, s.nb)
			s.rot = append(s.rot, rot)
			s.lists = append(s.lists, make([][]int32, s.nb))
		}
	}
	return s
}

// Decode implements mixer.Decoder for causal LSH attention: out [n,D] for
// the next n positions' inputs x [n,D]. Position t hashes its shared
// query/key in every round, joins the end of its bucket's list, and
// attends (one softmax over the union of its rounds' windows) to the keys
// of its chunk and the bucket's previous chunk, itself only when it has no
// other key: O(R·(dh·NB + bucket_size·D)) per position. Only the
// projections use more than one thread (at most threads).
func (m *LSH[F]) Decode(out, x []F, st mixer.State, n, threads int) error {
	s, ok := st.(*lshState[F])
	if !ok {
		return fmt.Errorf("lsh: a decoding state of another mixer")
	}
	if !m.causal {
		return fmt.Errorf("lsh: decoding needs a causal mixer")
	}
	if s.n+n > s.max {
		return fmt.Errorf("lsh: %d positions exceed the state's %d", s.n+n, s.max)
	}
	D, H, dh, half, bs := m.d, m.h, m.dh, s.nb/2, m.bucketSize
	grow := func(b []F, k int) []F {
		if cap(b) < k {
			return make([]F, k)
		}
		return b[:k]
	}
	s.qk, s.vn, s.att = grow(s.qk, n*D), grow(s.vn, n*D), grow(s.att, n*D)
	s.proj = grow(s.proj, half)
	th := mixer.Budget(threads)
	m.proj.Forward(th, pqk, s.qk, x, n)
	m.proj.Forward(th, pv, s.vn, x, n)
	for row := range n {
		i := s.n
		qk := s.qk[row*D : (row+1)*D]
		attn.RopeRows(m.rope, qk, []int{i})
		// The unit keys and the value of position i join the state.
		s.k = slices.Grow(s.k, D)[:len(s.k)+D]
		for h := range H {
			unitKey(s.k[i*D+h*dh:i*D+(h+1)*dh], qk[h*dh:(h+1)*dh])
		}
		s.v = append(s.v, s.vn[row*D:(row+1)*D]...)
		for len(s.mark) < i+1 {
			s.mark = append(s.mark, 0)
		}
		s.z = grow(s.z, i+1)
		for h := range H {
			// The union of the rounds' windows, marked with a stamp of
			// its own per (query, head).
			stamp := i*H + h + 1
			s.keys = s.keys[:0]
			for r := range m.nHashes {
				rot := s.rot[r*H+h]
				kernels.Gemm(1, kernels.PrecFP32, false, false, 1, half, dh, 1, qk[h*dh:(h+1)*dh], dh, rot, half, 0, s.proj, half)
				best, arg := F(math.Inf(-1)), 0 // argmax of [xR; −xR], the first maximum
				for j, v := range s.proj {
					if v > best {
						best, arg = v, j
					}
				}
				for j, v := range s.proj {
					if -v > best {
						best, arg = -v, half+j
					}
				}
				list := s.lists[r*H+h][arg]
				rank := len(list)
				lo := max(0, (rank/bs-1)*bs) // this chunk and the bucket's previous one
				for _, j := range list[lo:] {
					if s.mark[j] != stamp {
						s.mark[j] = stamp
						s.keys = append(s.keys, int(j))
					}
				}
				s.lists[r*H+h][arg] = append(list, int32(i))
			}
			att := s.att[row*D+h*dh : row*D+(h+1)*dh]
			if len(s.keys) == 0 { // no other key in any round: itself alone
				copy(att, s.v[i*D+h*dh:i*D+(h+1)*dh])
				continue
			}
			q := qk[h*dh : (h+1)*dh]
			z := s.z[:len(s.keys)]
			for c, j := range s.keys {
				z[c] = m.scale * kernels.Dot(q, s.k[j*D+h*dh:j*D+(h+1)*dh])
			}
			sum := kernels.ExpSub(z, z, kernels.Max(z))
			clear(att)
			for c, j := range s.keys {
				kernels.Axpy(att, z[c]/sum, s.v[j*D+h*dh:j*D+(h+1)*dh])
			}
		}
		s.n++
	}
	m.proj.Forward(th, po, out, s.att, n)
	return nil
}
