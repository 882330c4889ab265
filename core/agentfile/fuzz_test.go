package agentfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse parses arbitrary text with arbitrary --set overrides (one per
// line of the second argument). Parse must return an *Error naming the
// file or --set rather than panic, and a configuration it accepts must
// survive the run directory's config.toml: Encode's output parses back to
// a configuration that encodes to the same bytes.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "agentfile.toml"))
	files = append(files, filepath.Join("..", "..", "agentfile.toml"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	f.Add([]byte(good), "train.iterations=5\nreward.weights.speed=0.5")
	f.Add([]byte(good), "rewards.0.params.bound=3")
	f.Add([]byte(good), `llm.default.backend="openai"`)
	f.Add([]byte(good), "rewards.7.source=x")
	f.Add([]byte("[train\niterations = 3\n"), "")
	f.Fuzz(func(t *testing.T, text []byte, sets string) {
		var overrides []string
		if sets != "" {
			overrides = strings.Split(sets, "\n")
		}
		cfg, err := Parse("fuzz.toml", text, overrides...)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.File != "fuzz.toml" && e.File != "--set") {
				t.Fatalf("error %q (%T) does not name fuzz.toml or --set", err, err)
			}
			return
		}
		enc, err := cfg.Encode()
		if err != nil {
			t.Fatalf("an accepted configuration does not encode: %v", err)
		}
		again, err := Parse("config.toml", enc)
		if err != nil {
			t.Fatalf("the encoded configuration does not parse: %v\n%s", err, enc)
		}
		enc2, err := again.Encode()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable (%v):\n%s\n---\n%s", err, enc, enc2)
		}
	})
}
