package wasmabi

import "github.com/troupe-dev/troupe/core"

// Slab sizes: requests above a quarter of a slab get their own allocation.
const (
	slabObservations = 256
	slabFloats       = 4096
)

// Slab hands out observation and float slices carved from larger
// allocations, so that a host decoding replies step after step allocates
// once every few hundred steps instead of twice per step. A slice it hands
// out is never handed out again (the runtime keeps observations in its
// trajectories); a slab's memory is freed once no slice of it is
// referenced. The zero Slab is ready to use; a nil *Slab allocates every
// slice on its own. A Slab is not safe for concurrent use.
type Slab struct {
	obs    []core.Observation
	floats []float64
}

// observations returns n zeroed observations.
func (s *Slab) observations(n int) []core.Observation {
	if s == nil || n > slabObservations/4 {
		return make([]core.Observation, n)
	}
	if len(s.obs) < n {
		s.obs = make([]core.Observation, slabObservations)
	}
	o := s.obs[:n:n]
	s.obs = s.obs[n:]
	return o
}

// floatSlice returns n zeroed float64s.
func (s *Slab) floatSlice(n int) []float64 {
	if s == nil || n > slabFloats/4 {
		return make([]float64, n)
	}
	if len(s.floats) < n {
		s.floats = make([]float64, slabFloats)
	}
	f := s.floats[:n:n]
	s.floats = s.floats[n:]
	return f
}

// DecodeObservations is [DecodeObservations] with s's memory.
func (s *Slab) DecodeObservations(b []byte, sh Shape) ([]core.Observation, error) {
	return decodeObservations(b, sh, s)
}

// DecodeStepResult is [DecodeStepResult] with s's memory.
func (s *Slab) DecodeStepResult(b []byte, sh Shape) (core.StepResult, error) {
	return decodeStepResult(b, sh, s)
}
