package agentfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core/agentfile"
)

// undocumented are the keys README's agentfile block leaves out, and why.
var undocumented = map[string]string{
	"rewards.0.sandbox.isolation": "an error in [rewards.sandbox]: isolation is [env.sandbox]'s alone",
}

// configKeys returns the leaf keys of an agentfile as the types declare
// them: toml tags of structs (an untagged embedded struct's as its
// parent's), "default" for a map of tables, index 0 for an array of
// tables; a free-form table (map[string]any) is a leaf.
func configKeys(t reflect.Type, prefix string, out *[]string) {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		*out = append(*out, strings.TrimSuffix(prefix, "."))
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "":
				configKeys(f.Type, prefix, out)
			default:
				configKeys(f.Type, prefix+name+".", out)
			}
		}
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface:
		*out = append(*out, strings.TrimSuffix(prefix, "."))
	case t.Kind() == reflect.Map:
		configKeys(t.Elem(), prefix+"default.", out)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		configKeys(t.Elem(), prefix+"0.", out)
	default:
		*out = append(*out, strings.TrimSuffix(prefix, "."))
	}
}

// TestEveryKeyIsDocumented checks that README's agentfile block shows
// every key an agentfile can set, with its default (the block's values are
// checked against the components by
// TestEveryDocumentedKeyReachesItsComponent): a new setting must be
// documented where users look for it.
func TestEveryKeyIsDocumented(t *testing.T) {
	doc := documentedKeys(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := string(regexp.MustCompile("(?s)## agentfile.toml\n\n```toml\n(.*?)```").FindSubmatch(readme)[1])
	var keys []string
	configKeys(reflect.TypeFor[agentfile.Config](), "", &keys)
	if len(keys) < 50 || !slices.Contains(keys, "train.group_size") || !slices.Contains(keys, "env.sandbox.call_timeout") {
		t.Fatalf("the walk of agentfile.Config missed keys: %v", keys)
	}
	for _, k := range keys {
		if _, ok := undocumented[k]; ok {
			continue
		}
		if _, ok := doc[k]; ok {
			continue
		}
		switch {
		case k == "reward.weights.default":
			// A map of component names: the block gives examples.
			if !strings.Contains(block, "[reward.weights]") {
				t.Errorf("README's agentfile block has no [reward.weights]")
			}
			continue
		case strings.HasSuffix(k, ".params"):
			// A free-form table, documented by its header.
			header := "[" + strings.Replace(k, ".0.", ".", 1) + "]"
			if !strings.Contains(block, header) {
				t.Errorf("README's agentfile block has no %s", header)
			}
			continue
		}
		// An array of tables may document a key on a later entry.
		found := false
		if rest, ok := strings.CutPrefix(k, "rewards.0."); ok {
			for i := range 10 {
				_, in := doc[fmt.Sprintf("rewards.%d.%s", i, rest)]
				found = found || in
			}
		}
		if !found {
			t.Errorf("key %s is not in README's agentfile block", k)
		}
	}
}
