package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/troupe-dev/troupe/core/safetensors"
)

// FormatName is the "format" metadata value of a policy file.
const FormatName = "troupe.policy"

// FormatVersion is the "format_version" metadata value this package writes
// and reads.
const FormatVersion = 1

// TensorNames returns the tensor names of the parameters in layout order:
// for each network ("shared" or "agent<n>") and layer l,
// "<net>.layer<l>.weight" (shape [out, in]) then "<net>.layer<l>.bias"
// (shape [out]).
func (p *Policy) TensorNames() []string {
	var names []string
	for n := 0; n < p.cfg.NumNets(); n++ {
		for l := range p.layers {
			base := fmt.Sprintf("%s.layer%d.", p.cfg.NetName(n), l)
			names = append(names, base+"weight", base+"bias")
		}
	}
	return names
}

// EncodeVector adds to dst one F64 tensor per weight matrix and bias of v,
// a vector in the parameter layout (the parameters themselves, a gradient,
// an Adam moment), named prefix + the names of [Policy.TensorNames].
func (p *Policy) EncodeVector(prefix string, v []float64, dst map[string]safetensors.Tensor) error {
	if len(v) != len(p.params) {
		return fmt.Errorf("policy: vector has length %d, want %d", len(v), len(p.params))
	}
	for n := 0; n < p.cfg.NumNets(); n++ {
		for l, ly := range p.layers {
			base := fmt.Sprintf("%s%s.layer%d.", prefix, p.cfg.NetName(n), l)
			off := n * p.netSize
			dst[base+"weight"] = safetensors.FromFloat64([]int{ly.out, ly.in}, v[off+ly.wOff:off+ly.wOff+ly.out*ly.in])
			dst[base+"bias"] = safetensors.FromFloat64([]int{ly.out}, v[off+ly.bOff:off+ly.bOff+ly.out])
		}
	}
	return nil
}

// DecodeVector fills v (len NumParams) from the tensors that EncodeVector
// wrote with the same prefix, checking that each exists with the right
// shape (F64 or F32).
func (p *Policy) DecodeVector(prefix string, src map[string]safetensors.Tensor, v []float64) error {
	if len(v) != len(p.params) {
		return fmt.Errorf("policy: vector has length %d, want %d", len(v), len(p.params))
	}
	for n := 0; n < p.cfg.NumNets(); n++ {
		for l, ly := range p.layers {
			base := fmt.Sprintf("%s%s.layer%d.", prefix, p.cfg.NetName(n), l)
			off := n * p.netSize
			parts := []struct {
				name  string
				shape []int
				dst   []float64
			}{
				{base + "weight", []int{ly.out, ly.in}, v[off+ly.wOff : off+ly.wOff+ly.out*ly.in]},
				{base + "bias", []int{ly.out}, v[off+ly.bOff : off+ly.bOff+ly.out]},
			}
			for _, part := range parts {
				t, ok := src[part.name]
				if !ok {
					return fmt.Errorf("policy: tensor %q missing", part.name)
				}
				if !equalInts(t.Shape, part.shape) {
					return fmt.Errorf("policy: tensor %q has shape %v, want %v", part.name, t.Shape, part.shape)
				}
				vals, err := t.Float64()
				if err != nil {
					return fmt.Errorf("policy: tensor %q: %w", part.name, err)
				}
				copy(part.dst, vals)
			}
		}
	}
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Metadata returns the safetensors metadata of a policy file: "format",
// "format_version", "config" (the Config as JSON), "activation" ("tanh")
// and "input" (a description of the network input).
func (p *Policy) Metadata() map[string]string {
	cfg, _ := json.Marshal(p.cfg) // a Config always marshals
	input := "observation features"
	if p.cfg.Shared {
		input = "observation features followed by a one-hot agent id"
	}
	return map[string]string{
		"format":         FormatName,
		"format_version": strconv.Itoa(FormatVersion),
		"config":         string(cfg),
		"activation":     "tanh",
		"input":          input,
	}
}

// Save writes the policy to path as a safetensors file, atomically. Each
// layer is stored as F64 tensors "<net>.layer<l>.weight" (shape [out, in],
// as torch.nn.Linear) and "<net>.layer<l>.bias", with <net> "shared" or
// "agent<n>", and the metadata of [Policy.Metadata]; the logits of agent i
// are layerL(tanh(…tanh(layer0(x)))) with x = features (+ one-hot i when
// shared). Python users can open it with safetensors.numpy.load_file.
func (p *Policy) Save(path string) error {
	tensors := map[string]safetensors.Tensor{}
	if err := p.EncodeVector("", p.params, tensors); err != nil {
		return err
	}
	return safetensors.WriteFile(path, tensors, p.Metadata())
}

// ParseConfig decodes the "config" metadata of a policy file (unknown keys
// are errors) and validates it.
func ParseConfig(raw string) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("policy: config metadata: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// FromTensors builds a policy from the tensors and metadata of a policy
// file, the tensor names carrying the given prefix.
func FromTensors(prefix string, tensors map[string]safetensors.Tensor, metadata map[string]string) (*Policy, error) {
	if f := metadata["format"]; f != FormatName {
		return nil, fmt.Errorf("policy: metadata format is %q, want %q", f, FormatName)
	}
	if v := metadata["format_version"]; v != strconv.Itoa(FormatVersion) {
		return nil, fmt.Errorf("policy: format_version %q is not supported (want %d)", v, FormatVersion)
	}
	raw, ok := metadata["config"]
	if !ok {
		return nil, fmt.Errorf("policy: metadata has no \"config\"")
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	p, err := newZero(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.DecodeVector(prefix, tensors, p.params); err != nil {
		return nil, err
	}
	return p, nil
}

// Load reads a policy written by [Policy.Save]. Errors name the path.
func Load(path string) (*Policy, error) {
	tensors, metadata, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := FromTensors("", tensors, metadata)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tensors) != 2*len(p.layers)*p.cfg.NumNets() {
		known := map[string]bool{}
		for _, n := range p.TensorNames() {
			known[n] = true
		}
		for name := range tensors {
			if !known[name] {
				return nil, fmt.Errorf("%s: unexpected tensor %q in a policy file", path, name)
			}
		}
	}
	return p, nil
}
