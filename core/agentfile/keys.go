package agentfile

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// The keys of an agentfile are the toml tags of Config and of the
// component settings it nests; this file reads them from the types, so
// that the hints of an unknown key and the duration check cannot drift
// from the settings.

// tomlFields returns the fields of struct type t by their TOML name, with
// the fields of an untagged embedded struct (trainer.Config's grpo.Config)
// as t's own, as the decoder sees them.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			maps.Copy(fields, tomlFields(f.Type))
		case name == "":
			fields[f.Name] = f.Type
		default:
			fields[name] = f.Type
		}
	}
	return fields
}

// tableType returns the type of the value at path inside a value of type
// t. A path part names a field of a struct or an entry of a map; a slice
// (an array of tables) takes an index part or, as decoder keys have none,
// stands for its elements.
func tableType(t reflect.Type, path []string) (reflect.Type, bool) {
	for len(path) > 0 {
		switch t.Kind() {
		case reflect.Struct:
			ft, ok := tomlFields(t)[path[0]]
			if !ok {
				return nil, false
			}
			t, path = ft, path[1:]
		case reflect.Map:
			t, path = t.Elem(), path[1:]
		case reflect.Slice:
			if _, err := strconv.Atoi(path[0]); err == nil {
				path = path[1:]
			}
			t = t.Elem()
		default:
			return nil, false
		}
	}
	return t, true
}

// freeForm reports whether k lies inside a free-form table (a
// map[string]any such as env.params), whose keys belong to whoever reads
// them: the TOML decoder reports the keys of arrays of tables there as
// undecoded, yet they are passed on as they are.
func freeForm(k toml.Key) bool {
	t := configType
	for i := range k {
		if t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface {
			return true
		}
		next, ok := tableType(t, k[i:i+1])
		if !ok {
			return false
		}
		t = next
	}
	return false
}

// configType is the type the keys of an agentfile are read from.
var configType = reflect.TypeFor[Config]()

// suggest names the known keys of the table that holds k.
func suggest(k toml.Key) string {
	t, ok := tableType(configType, k[:len(k)-1])
	for ok && t.Kind() == reflect.Slice { // an array of tables: an entry
		t = t.Elem()
	}
	if !ok || t.Kind() != reflect.Struct {
		return ""
	}
	return " (known here: " + strings.Join(slices.Sorted(maps.Keys(tomlFields(t))), ", ") + ")"
}

// movedKeys maps a key that has moved to its new place. A file that uses
// the old key is told where it went; only the config.toml of a run
// directory written before the move is read as if it used the new one
// (see Load).
var movedKeys = map[string]string{
	"train.workers":   "rollout.workers",
	"train.max_steps": "rollout.max_steps",
}

// unknownKey says what is wrong with k, a key no setting has: where it
// moved, or which keys its table knows.
func unknownKey(k toml.Key) string {
	if to, ok := movedKeys[keyString(k)]; ok {
		table, key, _ := strings.Cut(to, ".")
		return fmt.Sprintf("moved to [%s] %s", table, key)
	}
	return "unknown key" + suggest(k)
}

// moveKeys rewrites the moved keys of tree (a run directory's config.toml
// as decoded) to their new places, and notes in lines that each new key is
// on the old key's line. It returns the old keys it moved, sorted.
func moveKeys(name string, tree map[string]any, lines *lineIndex) ([]string, error) {
	var moved []string
	for _, from := range slices.Sorted(maps.Keys(movedKeys)) {
		to := movedKeys[from]
		ft, fk, _ := strings.Cut(from, ".")
		tt, tk, _ := strings.Cut(to, ".")
		src, _ := tree[ft].(map[string]any)
		v, ok := src[fk]
		if !ok {
			continue
		}
		line := lines.findDotted(from)
		dst, _ := tree[tt].(map[string]any)
		if _, dup := dst[tk]; dup {
			return nil, &Error{File: name, Line: line, Key: from, Msg: fmt.Sprintf("moved to [%s] %s, which the file sets too", tt, tk)}
		}
		if dst == nil {
			dst = map[string]any{}
			tree[tt] = dst
		}
		dst[tk] = v
		delete(src, fk)
		lines.entries = append(lines.entries, lineEntry{to, line})
		moved = append(moved, from)
	}
	return moved, nil
}

// durationType is the type of the settings written as durations.
var durationType = reflect.TypeFor[time.Duration]()

// checkDurations reports the first duration setting of tree (a decoded
// file, with dotted keys below prefix) that is not a string
// time.ParseDuration accepts, with the key's dotted name: the decoder
// would read an integer as nanoseconds. t is the type tree decodes into.
func checkDurations(tree map[string]any, t reflect.Type, prefix string) (key, msg string) {
	fields := map[string]reflect.Type{}
	switch t.Kind() {
	case reflect.Struct:
		fields = tomlFields(t)
	case reflect.Map:
		for k := range tree {
			fields[k] = t.Elem()
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tree)) {
		ft, ok := fields[k]
		if !ok {
			continue // an unknown key, reported by the decoder
		}
		key := prefix + k
		switch v := tree[k].(type) {
		case map[string]any:
			if key, msg := checkDurations(v, ft, key+"."); key != "" {
				return key, msg
			}
		case []map[string]any, []any: // [[array]] or an inline array
			if ft.Kind() != reflect.Slice {
				continue
			}
			for i, e := range tableEntries(v) {
				if key, msg := checkDurations(e, ft.Elem(), fmt.Sprintf("%s.%d.", key, i)); key != "" {
					return key, msg
				}
			}
		case int64, float64:
			if ft == durationType {
				return key, fmt.Sprintf("a duration needs a unit, e.g. \"%[1]vms\" or \"%[1]vs\" (a bare number would be nanoseconds)", v)
			}
		case string:
			if _, err := time.ParseDuration(v); ft == durationType && err != nil {
				return key, fmt.Sprintf("invalid duration %q (want e.g. \"60s\", \"500ms\")", v)
			}
		}
	}
	return "", ""
}

// tableEntries returns the entries of an array of tables as decoded: an
// [[array]] is a []map[string]any, an inline array ([{...}, {...}]) a
// []any, whose entries that are not tables are nil here.
func tableEntries(array any) []map[string]any {
	if a, ok := array.([]map[string]any); ok {
		return a
	}
	a, _ := array.([]any)
	entries := make([]map[string]any, len(a))
	for i, e := range a {
		entries[i], _ = e.(map[string]any)
	}
	return entries
}
