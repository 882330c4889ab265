package core

import (
	"bytes"
	"encoding/json"
	"fmt"
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
