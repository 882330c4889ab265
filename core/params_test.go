package core

import (
	"math"
	"strings"
	"testing"
)

func TestDecodeParams(t *testing.T) {
	type P struct {
		Steps int       `json:"steps"`
		Rate  float64   `json:"rate"`
		Tiers []float64 `json:"tiers"`
		Sub   struct {
			K float64 `json:"k"`
		} `json:"sub"`
	}
	var p P
	p.Steps = 7
	if err := DecodeParams(map[string]any{"rate": 0.5, "sub": map[string]any{"k": -2.0}}, &p); err != nil || p.Steps != 7 || p.Rate != 0.5 || p.Sub.K != -2 {
		t.Fatalf("decoded %+v, %v", p, err)
	}
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"nope": 1}, `unknown key "nope"`},
		{map[string]any{"steps": "x"}, `key "steps": want int, got string`},
		{map[string]any{"rate": math.Inf(1)}, `key "rate": +Inf is not a finite number`},
		{map[string]any{"sub": map[string]any{"k": math.NaN()}}, `key "sub.k": NaN is not a finite number`},
		{map[string]any{"tiers": []any{1.0, math.Inf(-1)}}, `key "tiers[1]": -Inf is not a finite number`},
	} {
		var q P
		err := DecodeParams(c.params, &q)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeParams(%v): %v, want an error containing %q", c.params, err, c.want)
		}
	}
}
