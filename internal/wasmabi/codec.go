package wasmabi

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Flag bits of an observation record.
const obsHasMask = 1

// Flag bits of a step result.
const (
	stepTerminated = 1 << 0
	stepTruncated  = 1 << 1
	stepHasRewards = 1 << 2
)

// Flag bits of an episode.
const (
	epTerminated    = 1 << 0
	epTruncated     = 1 << 1
	epBudgetStopped = 1 << 2
)

// Reader decodes little-endian values from B. The first failure sticks in
// Err, and every later read returns a zero value, so a decoder checks Err
// once at the end.
type Reader struct {
	B   []byte
	Off int
	Err error

	slab *Slab // where decoded observations live; nil: their own allocations
}

func (r *Reader) need(n int, what string) bool {
	if r.Err != nil {
		return false
	}
	if n < 0 || n > len(r.B)-r.Off {
		r.Err = fmt.Errorf("at byte %d: %s needs %d bytes, only %d left", r.Off, what, n, len(r.B)-r.Off)
		return false
	}
	return true
}

// U32 reads a uint32.
func (r *Reader) U32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.B[r.Off:])
	r.Off += 4
	return v
}

// I32 reads an int32.
func (r *Reader) I32(what string) int32 { return int32(r.U32(what)) }

// U64 reads a uint64.
func (r *Reader) U64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.B[r.Off:])
	r.Off += 8
	return v
}

// I64 reads an int64.
func (r *Reader) I64(what string) int64 { return int64(r.U64(what)) }

// F64 reads a float64.
func (r *Reader) F64(what string) float64 { return math.Float64frombits(r.U64(what)) }

// Count reads a u32 element count and checks that count elements of at
// least minSize bytes each can still follow.
func (r *Reader) Count(what string, minSize int) int {
	n := r.U32(what)
	if r.Err != nil {
		return 0
	}
	if minSize > 0 && uint64(n)*uint64(minSize) > uint64(len(r.B)-r.Off) {
		r.Err = fmt.Errorf("at byte %d: %s %d is more than the %d bytes left can hold", r.Off-4, what, n, len(r.B)-r.Off)
		return 0
	}
	return int(n)
}

// Raw reads a u32 length and returns that many bytes, aliasing B.
func (r *Reader) Raw(what string) []byte {
	if r.Err != nil {
		return nil
	}
	if len(r.B)-r.Off < 4 {
		r.Err = fmt.Errorf("at byte %d: length of %s needs 4 bytes, only %d left", r.Off, what, len(r.B)-r.Off)
		return nil
	}
	n := binary.LittleEndian.Uint32(r.B[r.Off:])
	r.Off += 4
	if uint64(n) > uint64(len(r.B)-r.Off) {
		r.Err = fmt.Errorf("at byte %d: %s needs %d bytes, only %d left", r.Off, what, n, len(r.B)-r.Off)
		return nil
	}
	b := r.B[r.Off : r.Off+int(n) : r.Off+int(n)]
	r.Off += int(n)
	return b
}

// Str reads a length-prefixed string (copied).
func (r *Reader) Str(what string) string {
	b := r.Raw(what)
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// backend reads a backend name, interned.
func (r *Reader) backend() string { return internBackend(r.Raw("backend")) }

// internBackend returns the usual backend names without allocating.
func internBackend(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case "sim":
		return "sim"
	case "openai":
		return "openai"
	case "replay":
		return "replay"
	}
	return string(b)
}

// Bytes reads a length-prefixed byte string (copied).
func (r *Reader) Bytes(what string) []byte {
	b := r.Raw(what)
	if r.Err != nil {
		return nil
	}
	return slices.Clone(b)
}

// End records an error if bytes are left over. The error does not name
// what was read: the decoder that reads it wraps every error of its Reader
// with that name once.
func (r *Reader) End() {
	if r.Err == nil && r.Off != len(r.B) {
		r.Err = fmt.Errorf("%d unexpected bytes after byte %d", len(r.B)-r.Off, r.Off)
	}
}

// The append helpers below write little-endian values.

// AppendU32 appends a uint32.
func AppendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendU64 appends a uint64.
func AppendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// AppendF64 appends a float64.
func AppendF64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

// AppendStr appends a u32 length and the bytes of s.
func AppendStr(b []byte, s string) []byte {
	b = AppendU32(b, uint32(len(s)))
	return append(b, s...)
}

// AppendRaw appends a u32 length and p.
func AppendRaw(b []byte, p []byte) []byte {
	b = AppendU32(b, uint32(len(p)))
	return append(b, p...)
}

// ---- joint action -------------------------------------------------------

// ActionsSize returns the encoded size of a joint action.
func ActionsSize(actions []core.Action) int {
	n := 4
	for i := range actions {
		n += 4 + 8 + 8 + 8 + 4 + len(actions[i].Usage.Backend) + 4 + len(actions[i].Text)
	}
	return n
}

// AppendActions encodes a joint action:
//
//	u32 n; n × {i32 decision; i64 prompt_tokens; i64 completion_tokens;
//	i64 latency_ns; str backend; str text}
func AppendActions(b []byte, actions []core.Action) []byte {
	b = AppendU32(b, uint32(len(actions)))
	for i := range actions {
		a := &actions[i]
		b = AppendU32(b, uint32(int32(a.Decision)))
		b = AppendU64(b, uint64(int64(a.Usage.PromptTokens)))
		b = AppendU64(b, uint64(int64(a.Usage.CompletionTokens)))
		b = AppendU64(b, uint64(int64(a.Usage.Latency)))
		b = AppendStr(b, a.Usage.Backend)
		b = AppendStr(b, a.Text)
	}
	return b
}

// DecodeActions decodes a joint action into dst (reused when large enough).
// It reads with plain index arithmetic, which matters in a Go guest
// compiled to Wasm, where every method call is expensive.
func DecodeActions(b []byte, dst []core.Action) ([]core.Action, error) {
	le := binary.LittleEndian
	fail := func(off int, format string, args ...any) ([]core.Action, error) {
		return dst[:0], fmt.Errorf("joint action: at byte %d: "+format, append([]any{off}, args...)...)
	}
	if len(b) < 4 {
		return fail(0, "agent count needs 4 bytes, only %d left", len(b))
	}
	n := int(le.Uint32(b))
	if uint64(n)*36 > uint64(len(b)-4) {
		return fail(0, "agent count %d is more than the %d bytes left can hold", n, len(b)-4)
	}
	if cap(dst) < n {
		dst = make([]core.Action, n)
	}
	dst = dst[:n]
	off := 4
	for i := range dst {
		if len(b)-off < 32 {
			return fail(off, "agent %d: action needs 32 bytes, only %d left", i, len(b)-off)
		}
		r := b[off : off+32]
		a := &dst[i]
		a.Decision = int(int32(le.Uint32(r)))
		a.Usage.PromptTokens = int(int64(le.Uint64(r[4:])))
		a.Usage.CompletionTokens = int(int64(le.Uint64(r[12:])))
		a.Usage.Latency = time.Duration(int64(le.Uint64(r[20:])))
		bl := int(le.Uint32(r[28:]))
		off += 32
		if bl > len(b)-off {
			return fail(off-4, "agent %d: backend length %d beyond the input", i, bl)
		}
		a.Usage.Backend = internBackend(b[off : off+bl])
		off += bl
		if len(b)-off < 4 {
			return fail(off, "agent %d: text length needs 4 bytes", i)
		}
		tl := int(le.Uint32(b[off:]))
		off += 4
		if tl > len(b)-off {
			return fail(off-4, "agent %d: text length %d beyond the input", i, tl)
		}
		a.Text = ""
		if tl > 0 {
			a.Text = string(b[off : off+tl])
		}
		off += tl
	}
	if off != len(b) {
		return fail(off, "%d unexpected bytes at the end", len(b)-off)
	}
	return dst, nil
}

// ---- observations -------------------------------------------------------

// Shape is what a decoder checks observations against: the spec's number of
// agents, features per observation and decisions.
type Shape struct {
	Agents, ObsSize, Decisions int
}

// ShapeOf returns the shape of a spec.
func ShapeOf(s core.EnvSpec) Shape {
	return Shape{Agents: len(s.Agents), ObsSize: s.ObsSize, Decisions: len(s.Decisions)}
}

func maskBytes(decisions int) int { return (decisions + 7) / 8 }

// AppendObservations encodes observations:
//
//	u32 n_agents; u32 obs_size; u32 n_decisions;
//	n × {u32 flags (bit 0: has mask); f64 × obs_size features;
//	     [ceil(n_decisions/8) mask bytes, bit d of byte d/8, LSB first]; str text}
//
// It fails if an observation does not fit the shape.
func AppendObservations(b []byte, obs []core.Observation, sh Shape) ([]byte, error) {
	if len(obs) != sh.Agents {
		return b, fmt.Errorf("%d observations for %d agents", len(obs), sh.Agents)
	}
	mb := maskBytes(sh.Decisions)
	size := 12
	for i := range obs {
		o := &obs[i]
		if len(o.Features) != sh.ObsSize {
			return b, fmt.Errorf("observation of agent %d has %d features, obs_size is %d", i, len(o.Features), sh.ObsSize)
		}
		if o.Mask != nil && len(o.Mask) != sh.Decisions {
			return b, fmt.Errorf("mask of agent %d has %d entries, there are %d decisions", i, len(o.Mask), sh.Decisions)
		}
		size += 4 + 8*len(o.Features) + 4 + len(o.Text)
		if o.Mask != nil {
			size += mb
		}
	}
	// Size first, then fixed-offset stores: far cheaper than appending
	// value by value in a Go guest compiled to Wasm.
	off := len(b)
	b = slices.Grow(b, size)[:off+size]
	le := binary.LittleEndian
	le.PutUint32(b[off:], uint32(len(obs)))
	le.PutUint32(b[off+4:], uint32(sh.ObsSize))
	le.PutUint32(b[off+8:], uint32(sh.Decisions))
	off += 12
	for i := range obs {
		o := &obs[i]
		var flags uint32
		if o.Mask != nil {
			flags = obsHasMask
		}
		le.PutUint32(b[off:], flags)
		off += 4
		putFloats(b[off:], o.Features)
		off += 8 * len(o.Features)
		if o.Mask != nil {
			m := b[off : off+mb]
			clear(m)
			for d, legal := range o.Mask {
				if legal {
					m[d/8] |= 1 << (d % 8)
				}
			}
			off += mb
		}
		le.PutUint32(b[off:], uint32(len(o.Text)))
		off += 4
		off += copy(b[off:], o.Text)
	}
	return b, nil
}

// Observations decodes an observations block that must match sh.
func (r *Reader) Observations(sh Shape) []core.Observation {
	obs, _ := r.observations(sh, 0)
	return obs
}

// observations decodes an observations block and also returns extra
// float64s from the features' allocation (one allocation fewer on the
// host's hot path, as envs/lbf does for its rewards).
func (r *Reader) observations(sh Shape, extra int) ([]core.Observation, []float64) {
	n := r.U32("agent count")
	obsSize := r.U32("obs_size")
	nd := r.U32("decision count")
	if r.Err != nil {
		return nil, nil
	}
	switch {
	case int(n) != sh.Agents:
		r.Err = fmt.Errorf("at byte %d: %d observations, the spec has %d agents", r.Off-12, n, sh.Agents)
	case int(obsSize) != sh.ObsSize:
		r.Err = fmt.Errorf("at byte %d: obs_size %d, the spec says %d", r.Off-8, obsSize, sh.ObsSize)
	case int(nd) != sh.Decisions:
		r.Err = fmt.Errorf("at byte %d: %d decisions, the spec has %d", r.Off-4, nd, sh.Decisions)
	}
	if r.Err != nil {
		return nil, nil
	}
	if uint64(n)*uint64(8+8*obsSize) > uint64(len(r.B)-r.Off) {
		r.Err = fmt.Errorf("at byte %d: %d observations of %d features do not fit in the %d bytes left", r.Off, n, obsSize, len(r.B)-r.Off)
		return nil, nil
	}
	// Plain index arithmetic from here: this is the host's hot path.
	b, off := r.B, r.Off
	le := binary.LittleEndian
	fail := func(format string, args ...any) ([]core.Observation, []float64) {
		r.Err = fmt.Errorf("at byte %d: "+format, append([]any{off}, args...)...)
		return nil, nil
	}
	obs := r.slab.observations(int(n))
	fn := int(obsSize)
	ndec := sh.Decisions
	mb := maskBytes(ndec)
	// One allocation holds the features, the extra floats and, when the
	// first observation has a mask (envs with masks send them for every
	// agent), the masks.
	maskFloats := 0
	if len(b)-off >= 4 && le.Uint32(b[off:])&obsHasMask != 0 {
		maskFloats = (int(n)*ndec + 7) / 8
	}
	feats := r.slab.floatSlice(int(n)*fn + extra + maskFloats)
	more := feats[int(n)*fn : int(n)*fn+extra : int(n)*fn+extra]
	var masks []bool
	if maskFloats > 0 {
		masks = boolsIn(feats[int(n)*fn+extra:], int(n)*ndec)
	}
	for i := range obs {
		if len(b)-off < 4+8*fn {
			return fail("agent %d: observation needs %d bytes, only %d left", i, 4+8*fn, len(b)-off)
		}
		flags := le.Uint32(b[off:])
		if flags&^obsHasMask != 0 {
			return fail("agent %d: unknown observation flags %#x", i, flags)
		}
		off += 4
		f := feats[i*fn : (i+1)*fn : (i+1)*fn]
		getFloats(f, b[off:])
		off += 8 * fn
		obs[i].Features = f
		if flags&obsHasMask != 0 {
			if len(b)-off < mb {
				return fail("agent %d: mask needs %d bytes, only %d left", i, mb, len(b)-off)
			}
			if masks == nil {
				masks = make([]bool, int(n)*ndec)
			}
			m := masks[i*ndec : (i+1)*ndec : (i+1)*ndec]
			mbits := b[off : off+mb]
			for d := range m {
				m[d] = mbits[d/8]&(1<<(d%8)) != 0
			}
			if ndec%8 != 0 && mbits[mb-1]>>(ndec%8) != 0 {
				off += mb - 1
				return fail("agent %d: mask bits set beyond decision %d", i, ndec-1)
			}
			off += mb
			obs[i].Mask = m
		}
		if len(b)-off < 4 {
			return fail("agent %d: text length needs 4 bytes, only %d left", i, len(b)-off)
		}
		tl := int(le.Uint32(b[off:]))
		off += 4
		if tl > len(b)-off {
			off -= 4
			return fail("agent %d: text length %d beyond the %d bytes left", i, tl, len(b)-off-4)
		}
		if tl > 0 {
			obs[i].Text = string(b[off : off+tl])
		}
		off += tl
	}
	r.Off = off
	return obs, more
}

// DecodeObservations decodes a complete reset reply.
func DecodeObservations(b []byte, sh Shape) ([]core.Observation, error) {
	return decodeObservations(b, sh, nil)
}

func decodeObservations(b []byte, sh Shape, slab *Slab) ([]core.Observation, error) {
	r := Reader{B: b, slab: slab}
	obs := r.Observations(sh)
	r.End()
	if r.Err != nil {
		return nil, fmt.Errorf("observations: %w", r.Err)
	}
	return obs, nil
}

// ---- step result --------------------------------------------------------

// AppendStepResult encodes a step result:
//
//	u32 flags (bit 0 terminated, bit 1 truncated, bit 2 has rewards);
//	observations; [f64 × n_agents rewards]; u32 n_metrics; n × {str name;
//	f64 value}; u32 n_artifacts; n × {str name; str data}
//
// Metrics and artifacts are written sorted by name.
func AppendStepResult(b []byte, res *core.StepResult, sh Shape) ([]byte, error) {
	var flags uint32
	if res.Terminated {
		flags |= stepTerminated
	}
	if res.Truncated {
		flags |= stepTruncated
	}
	if res.Rewards != nil {
		if len(res.Rewards) != sh.Agents {
			return b, fmt.Errorf("%d rewards for %d agents", len(res.Rewards), sh.Agents)
		}
		flags |= stepHasRewards
	}
	b = AppendU32(b, flags)
	b, err := AppendObservations(b, res.Observations, sh)
	if err != nil {
		return b, err
	}
	if len(res.Rewards) > 0 {
		off := len(b)
		b = slices.Grow(b, 8*len(res.Rewards))[:off+8*len(res.Rewards)]
		putFloats(b[off:], res.Rewards)
	}
	b = AppendMetrics(b, res.Metrics)
	b = AppendU32(b, uint32(len(res.Artifacts)))
	// Most steps carry no artifacts: skip the key sort, whose iterator
	// allocates, and a Go guest's allocations are its dearest work.
	if len(res.Artifacts) > 0 {
		for _, k := range slices.Sorted(maps.Keys(res.Artifacts)) {
			b = AppendStr(b, k)
			b = AppendRaw(b, res.Artifacts[k])
		}
	}
	return b, nil
}

// DecodeStepResult decodes a step (or truncate) reply that must match sh.
func DecodeStepResult(b []byte, sh Shape) (core.StepResult, error) {
	return decodeStepResult(b, sh, nil)
}

func decodeStepResult(b []byte, sh Shape, slab *Slab) (core.StepResult, error) {
	r := Reader{B: b, slab: slab}
	var res core.StepResult
	flags := r.U32("step flags")
	if r.Err == nil && flags&^(stepTerminated|stepTruncated|stepHasRewards) != 0 {
		r.Err = fmt.Errorf("at byte 0: unknown step flags %#x", flags)
	}
	res.Terminated = flags&stepTerminated != 0
	res.Truncated = flags&stepTruncated != 0
	extra := 0
	if flags&stepHasRewards != 0 {
		extra = sh.Agents
	}
	obs, rewards := r.observations(sh, extra)
	res.Observations = obs
	if extra > 0 && r.need(8*sh.Agents, "rewards") {
		res.Rewards = rewards[:sh.Agents:sh.Agents]
		getFloats(res.Rewards, r.B[r.Off:])
		r.Off += 8 * sh.Agents
	}
	res.Metrics = r.Metrics("metric count")
	if n := r.Count("artifact count", 8); n > 0 {
		res.Artifacts = make(map[string][]byte, n)
		for range n {
			k := r.Str("artifact name")
			res.Artifacts[k] = r.Bytes("artifact data")
		}
	}
	r.End()
	if r.Err != nil {
		return core.StepResult{}, fmt.Errorf("step result: %w", r.Err)
	}
	return res, nil
}

// AppendMetrics appends u32 n; n × {str name; f64 value}, sorted by name.
func AppendMetrics(b []byte, m map[string]float64) []byte {
	b = AppendU32(b, uint32(len(m)))
	if len(m) == 0 {
		return b
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = AppendStr(b, k)
		b = AppendF64(b, m[k])
	}
	return b
}

// Metrics decodes what AppendMetrics wrote (nil when empty).
func (r *Reader) Metrics(what string) map[string]float64 {
	n := r.Count(what, 12)
	if n == 0 {
		return nil
	}
	m := make(map[string]float64, n)
	for range n {
		k := r.Str("metric name")
		m[k] = r.F64("metric value")
	}
	return m
}

// ---- state, decisions ---------------------------------------------------

// AppendFloats appends u32 n; f64 × n.
func AppendFloats(b []byte, v []float64) []byte {
	b = AppendU32(b, uint32(len(v)))
	off := len(b)
	b = slices.Grow(b, 8*len(v))[:off+8*len(v)]
	putFloats(b[off:], v)
	return b
}

// DecodeFloats decodes what AppendFloats wrote; want < 0 accepts any length.
func DecodeFloats(b []byte, want int) ([]float64, error) {
	r := Reader{B: b}
	n := r.Count("value count", 8)
	if r.Err == nil && want >= 0 && n != want {
		r.Err = fmt.Errorf("%d values, want %d", n, want)
	}
	var v []float64
	if r.Err == nil {
		v = make([]float64, n)
		getFloats(v, r.B[r.Off:])
		r.Off += 8 * n
	}
	r.End()
	if r.Err != nil {
		return nil, fmt.Errorf("state: %w", r.Err)
	}
	return v, nil
}

// AppendDecisions appends u32 n; i32 × n.
func AppendDecisions(b []byte, d []int) []byte {
	b = AppendU32(b, uint32(len(d)))
	for _, x := range d {
		b = AppendU32(b, uint32(int32(x)))
	}
	return b
}

// DecodeDecisions decodes what AppendDecisions wrote; there must be want.
func DecodeDecisions(b []byte, want int) ([]int, error) {
	r := Reader{B: b}
	n := r.Count("decision count", 4)
	if r.Err == nil && n != want {
		r.Err = fmt.Errorf("%d decisions for %d agents", n, want)
	}
	var d []int
	if r.Err == nil {
		d = make([]int, n)
		for i := range d {
			d[i] = int(r.I32("decision"))
		}
	}
	r.End()
	if r.Err != nil {
		return nil, fmt.Errorf("baseline decisions: %w", r.Err)
	}
	return d, nil
}

// AppendBaselineCall encodes the baseline export's input: str name;
// observations.
func AppendBaselineCall(b []byte, name string, obs []core.Observation, sh Shape) ([]byte, error) {
	b = AppendStr(b, name)
	return AppendObservations(b, obs, sh)
}

// DecodeBaselineCall decodes what AppendBaselineCall wrote.
func DecodeBaselineCall(b []byte, sh Shape) (string, []core.Observation, error) {
	r := Reader{B: b}
	name := r.Str("baseline name")
	obs := r.Observations(sh)
	r.End()
	if r.Err != nil {
		return "", nil, fmt.Errorf("baseline call: %w", r.Err)
	}
	return name, obs, nil
}

// ---- episode, score -----------------------------------------------------

// AppendEpisode encodes an episode for the score export:
//
//	str env; u64 seed; u32 steps; u32 flags (bit 0 terminated, bit 1
//	truncated, bit 2 budget stopped); u32 n; f64 × n agent returns;
//	u32 n; n × {i64 prompt_tokens; i64 completion_tokens; i64 latency_ns;
//	str backend} agent usage; metrics; u32 n; n × {str name; str data}
//	artifacts
func AppendEpisode(b []byte, ep *core.Episode) []byte {
	b = AppendStr(b, ep.Env)
	b = AppendU64(b, ep.Seed)
	b = AppendU32(b, uint32(ep.Steps))
	var flags uint32
	if ep.Terminated {
		flags |= epTerminated
	}
	if ep.Truncated {
		flags |= epTruncated
	}
	if ep.BudgetStopped {
		flags |= epBudgetStopped
	}
	b = AppendU32(b, flags)
	b = AppendFloats(b, ep.AgentReturns)
	b = AppendU32(b, uint32(len(ep.AgentUsage)))
	for _, u := range ep.AgentUsage {
		b = AppendU64(b, uint64(int64(u.PromptTokens)))
		b = AppendU64(b, uint64(int64(u.CompletionTokens)))
		b = AppendU64(b, uint64(int64(u.Latency)))
		b = AppendStr(b, u.Backend)
	}
	b = AppendMetrics(b, ep.Metrics)
	b = AppendU32(b, uint32(len(ep.Artifacts)))
	for _, k := range slices.Sorted(maps.Keys(ep.Artifacts)) {
		b = AppendStr(b, k)
		b = AppendRaw(b, ep.Artifacts[k])
	}
	return b
}

// DecodeEpisode decodes what AppendEpisode wrote.
func DecodeEpisode(b []byte) (*core.Episode, error) {
	r := Reader{B: b}
	ep := &core.Episode{}
	ep.Env = r.Str("env name")
	ep.Seed = r.U64("seed")
	ep.Steps = int(r.U32("steps"))
	flags := r.U32("episode flags")
	ep.Terminated = flags&epTerminated != 0
	ep.Truncated = flags&epTruncated != 0
	ep.BudgetStopped = flags&epBudgetStopped != 0
	if n := r.Count("return count", 8); n > 0 {
		ep.AgentReturns = make([]float64, n)
		for i := range ep.AgentReturns {
			ep.AgentReturns[i] = r.F64("agent return")
		}
	}
	if n := r.Count("usage count", 28); n > 0 {
		ep.AgentUsage = make([]core.Usage, n)
		for i := range ep.AgentUsage {
			u := &ep.AgentUsage[i]
			u.PromptTokens = int(r.I64("prompt_tokens"))
			u.CompletionTokens = int(r.I64("completion_tokens"))
			u.Latency = time.Duration(r.I64("latency_ns"))
			u.Backend = r.backend()
		}
	}
	ep.Metrics = r.Metrics("metric count")
	if n := r.Count("artifact count", 8); n > 0 {
		ep.Artifacts = make(map[string][]byte, n)
		for range n {
			k := r.Str("artifact name")
			ep.Artifacts[k] = r.Bytes("artifact data")
		}
	}
	r.End()
	if r.Err != nil {
		return nil, fmt.Errorf("episode: %w", r.Err)
	}
	return ep, nil
}

// AppendScore encodes the score export's reply: components, then metrics,
// each as u32 n; n × {str name; f64 value}.
func AppendScore(b []byte, components, metrics map[string]float64) []byte {
	b = AppendMetrics(b, components)
	return AppendMetrics(b, metrics)
}

// DecodeScore decodes what AppendScore wrote.
func DecodeScore(b []byte) (components, metrics map[string]float64, err error) {
	r := Reader{B: b}
	components = r.Metrics("component count")
	metrics = r.Metrics("metric count")
	r.End()
	if r.Err != nil {
		return nil, nil, fmt.Errorf("score: %w", r.Err)
	}
	if components == nil {
		components = map[string]float64{}
	}
	return components, metrics, nil
}

// ---- error message ------------------------------------------------------

// MaxErrorLen bounds the error messages the host reads.
const MaxErrorLen = 4096

// AppendError encodes an error message: str message.
func AppendError(b []byte, msg string) []byte {
	if len(msg) > MaxErrorLen {
		msg = msg[:MaxErrorLen]
	}
	return AppendStr(b, msg)
}

// DecodeError reads the message after a negative code; a malformed message
// yields a description of the problem instead.
func DecodeError(b []byte) string {
	if len(b) < 4 {
		return "(no message: buffer too small)"
	}
	n := binary.LittleEndian.Uint32(b)
	if n > MaxErrorLen {
		n = MaxErrorLen
	}
	if int(n) > len(b)-4 {
		return "(no message: length beyond the buffer)"
	}
	return string(b[4 : 4+n])
}
