package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/trainer"
)

// resumeFreeKeys are the settings --resume may change without
// --accept-changes: they do not change what an iteration computes
// (train.iterations only says how many there are; results are identical
// for any number of rollout workers). They are still recorded in the run's
// changes.jsonl.
var resumeFreeKeys = map[string]bool{
	"train.iterations": true,
	"rollout.workers":  true,
}

// configChanges compares the resolved configuration of a run (its
// config.toml) with the one a resumed run would use, key by key (dotted
// keys, array elements by index), and returns the differences in key
// order.
func configChanges(run, now agentfile.Config) ([]trainer.ConfigChange, error) {
	flat := func(c agentfile.Config) (map[string]any, error) {
		b, err := c.Resolved().Encode()
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := toml.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out := map[string]any{}
		flatten("", m, out)
		return out, nil
	}
	a, err := flat(run)
	if err != nil {
		return nil, err
	}
	b, err := flat(now)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []trainer.ConfigChange
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		old, okOld := a[k]
		cur, okNew := b[k]
		if okOld && okNew && reflect.DeepEqual(old, cur) {
			continue
		}
		out = append(out, trainer.ConfigChange{Key: k, Old: old, New: cur})
	}
	return out, nil
}

// flatten stores the leaves of v (decoded TOML) in out under dotted keys.
func flatten(prefix string, v any, out map[string]any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(join(k), e, out)
		}
	case []map[string]any:
		for i, e := range x {
			flatten(join(strconv.Itoa(i)), e, out)
		}
	case []any:
		// Arrays of tables are flattened; arrays of values are one leaf.
		tables := len(x) > 0
		for _, e := range x {
			if _, ok := e.(map[string]any); !ok {
				tables = false
			}
		}
		if !tables {
			out[prefix] = v
			return
		}
		for i, e := range x {
			flatten(join(strconv.Itoa(i)), e, out)
		}
	default:
		out[prefix] = v
	}
}

// describeChanges renders changes one per line, "  key: old → new".
func describeChanges(changes []trainer.ConfigChange) string {
	show := func(v any) string {
		if v == nil {
			return "(unset)"
		}
		if s, ok := v.(string); ok {
			return strconv.Quote(s)
		}
		return fmt.Sprint(v)
	}
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s: %s → %s\n", c.Key, show(c.Old), show(c.New))
	}
	return b.String()
}

// noRunDir reports whether dir is not a directory, saying so on stderr
// after what (the command and the argument that named it).
func noRunDir(stderr io.Writer, what, dir string) bool {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return false
	}
	fmt.Fprintf(stderr, "%s: no such run directory (a directory that troupe train --out wrote)\n", what)
	return true
}
