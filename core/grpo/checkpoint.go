package grpo

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/safetensors"
)

// CheckpointFormat is the "format" metadata value of an optimizer
// checkpoint.
const CheckpointFormat = "troupe.grpo.checkpoint"

// checkpointVersion is the "format_version" this package writes and reads.
const checkpointVersion = 1

// Save writes the optimizer's whole state to path as one safetensors file,
// atomically: the policy ("policy.<net>.layer<l>.weight|bias"), the
// reference policy ("reference.…"), Adam's moments ("adam.m.…",
// "adam.v.…"), all F64, and the step count ("adam.step", I64 scalar); the
// metadata holds the policy config, the optimizer config and the format.
// The caller's rng state is not included: save it alongside (math/rand/v2's
// PCG implements encoding.BinaryMarshaler).
func (o *Optimizer) Save(path string) error {
	tensors := map[string]safetensors.Tensor{}
	for _, part := range []struct {
		prefix string
		v      []float64
	}{
		{"policy.", o.pol.Params()},
		{"reference.", o.ref.Params()},
		{"adam.m.", o.adam.M},
		{"adam.v.", o.adam.V},
	} {
		if err := o.pol.EncodeVector(part.prefix, part.v, tensors); err != nil {
			return err
		}
	}
	tensors["adam.step"] = safetensors.FromInt64([]int{}, []int64{int64(o.adam.T)})
	meta := o.pol.Metadata()
	meta["format"] = CheckpointFormat
	meta["format_version"] = strconv.Itoa(checkpointVersion)
	gc, _ := json.Marshal(o.cfg) // a Config always marshals
	meta["grpo_config"] = string(gc)
	return safetensors.WriteFile(path, tensors, meta)
}

// Load restores the state written by Save into o: the policy's parameters
// (in place, so the *policy.Policy given to NewOptimizer stays valid), the
// reference policy, Adam's moments and step count. The checkpoint's policy
// architecture must match o's. o's Config is kept (the file's is
// informational); for a bit-identical resume use the same Config and rng
// state. On error o is unchanged.
func (o *Optimizer) Load(path string) error {
	tensors, meta, err := safetensors.ReadFile(path)
	if err != nil {
		return err
	}
	if err := o.restore(tensors, meta); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (o *Optimizer) restore(tensors map[string]safetensors.Tensor, meta map[string]string) error {
	if f := meta["format"]; f != CheckpointFormat {
		return fmt.Errorf("grpo: not an optimizer checkpoint (format %q, want %q)", f, CheckpointFormat)
	}
	if v := meta["format_version"]; v != strconv.Itoa(checkpointVersion) {
		return fmt.Errorf("grpo: checkpoint format_version %q is not supported (want %d)", v, checkpointVersion)
	}
	cfg, err := policy.ParseConfig(meta["config"])
	if err != nil {
		return err
	}
	if mine := o.pol.Config(); !cfg.SameArchitecture(mine) {
		return fmt.Errorf("grpo: checkpoint policy %s does not match the optimizer's %s", meta["config"], mustJSON(mine))
	}
	n := o.pol.NumParams()
	pol, ref, m, v := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for _, part := range []struct {
		prefix string
		dst    []float64
	}{{"policy.", pol}, {"reference.", ref}, {"adam.m.", m}, {"adam.v.", v}} {
		if err := o.pol.DecodeVector(part.prefix, tensors, part.dst); err != nil {
			return err
		}
	}
	st, ok := tensors["adam.step"]
	if !ok {
		return fmt.Errorf("grpo: tensor \"adam.step\" missing")
	}
	steps, err := st.Int64()
	if err != nil || len(steps) != 1 || steps[0] < 0 {
		return fmt.Errorf("grpo: tensor \"adam.step\" must be one non-negative integer (%v)", err)
	}
	copy(o.pol.Params(), pol)
	copy(o.ref.Params(), ref)
	copy(o.adam.M, m)
	copy(o.adam.V, v)
	o.adam.T = int(steps[0])
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
