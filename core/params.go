package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// DecodeParams decodes env or reward params (as given in the agentfile's
// env.params table) into dst, a pointer to a struct with json tags. Keys
// absent from params keep dst's values, so set defaults before calling.
// Unknown keys and wrong types are errors that name the key.
func DecodeParams(params map[string]any, dst any) error {
	if len(params) == 0 {
		return nil
	}
	if key, v, ok := nonFinite("", params); ok {
		return fmt.Errorf("params: key %q: %v is not a finite number", key, v)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("params: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return fmt.Errorf("params: unknown key %s", f)
		}
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return fmt.Errorf("params: key %q: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("params: %s", strings.TrimPrefix(msg, "json: "))
	}
	return nil
}

// nonFinite finds a NaN or infinite number in v (TOML allows nan and inf,
// JSON does not) and returns its dotted key.
func nonFinite(key string, v any) (string, float64, bool) {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return key, v, true
		}
	case float32:
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return key, f, true
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub := k
			if key != "" {
				sub = key + "." + k
			}
			if kk, f, ok := nonFinite(sub, v[k]); ok {
				return kk, f, true
			}
		}
	case []any:
		for i, e := range v {
			if kk, f, ok := nonFinite(fmt.Sprintf("%s[%d]", key, i), e); ok {
				return kk, f, true
			}
		}
	}
	return "", 0, false
}
