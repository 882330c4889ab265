package agentfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// Error is a configuration error. It names where the problem is: the file
// and line when the decoder or the file's text gives one, and the key.
type Error struct {
	File string // the agentfile, or "--set" for a command-line override
	Line int    // 1-based; 0 when unknown
	Key  string // dotted key, e.g. "train.group_size"
	Msg  string

	err error // the underlying error, if any
}

// Error returns "FILE[:LINE][: KEY]: MSG".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	return b.String()
}

// Unwrap returns the error that caused e, if any.
func (e *Error) Unwrap() error { return e.err }

// source remembers where a Config came from, so that errors found after
// loading (when the env and rewards are built) can name the file and line.
type source struct {
	name      string // the file as given to Load or Parse
	lines     lineIndex
	overrides []string
}

// errorAt returns the configuration error of err at key: about key, or,
// when err is a component's *core.SettingError, about the setting's key
// inside the table key ("" for the top level). It names the file and the
// key's line (or the line of its nearest enclosing table), or --set when
// an override set the key.
func (c Config) errorAt(key string, err error) *Error {
	e := &Error{Key: key, Msg: err.Error(), err: err}
	if se, ok := errors.AsType[*core.SettingError](err); ok {
		if key != "" {
			se = se.In(key)
		}
		e.Key, e.Msg = se.Key, se.Msg
	}
	c.locate(e)
	return e
}

// locate fills e.File and e.Line from where c came from.
func (c Config) locate(e *Error) {
	if c.src == nil {
		e.File = c.Path
		return
	}
	if overridden(c.src.overrides, e.Key) {
		e.File, e.Line = "--set", 0
		return
	}
	e.File, e.Line = c.src.name, c.src.lines.findNearest(e.Key)
	// An error about a table ("env: … params: key \"writers\" …") may be
	// about a value an override set inside it.
	if inside := overridesInside(c.src.overrides, e.Key); len(inside) > 0 {
		e.Msg += " (with --set " + strings.Join(inside, ", --set ") + ")"
	}
}

// overridesInside returns the overrides that set a key inside the table
// key ("env.params.writers=0" for "env"), as given.
func overridesInside(overrides []string, key string) []string {
	if key == "" {
		return nil
	}
	var out []string
	for _, o := range overrides {
		if k, _, _ := strings.Cut(o, "="); strings.HasPrefix(strings.TrimSpace(k), key+".") {
			out = append(out, strings.TrimSpace(o))
		}
	}
	return out
}

// Load reads the agentfile at path, applies overrides ("dotted.key=value",
// the value written as a TOML value; a bare word is a string), fills
// defaults and validates the result.
//
// A run directory's config.toml (the text Encode writes, recognized by
// its first line) is history: a key it holds that has since moved
// (train.workers, now rollout.workers) is read as the new key. Any other
// file, and every override, is told where such a key went.
func Load(path string, overrides ...string) (Config, error) {
	return LoadWithWarnings(path, nil, overrides...)
}

// LoadWithWarnings is Load that calls warn, if not nil, once with a
// message naming the moved keys of a run directory's config.toml it read
// as their new keys.
func LoadWithWarnings(path string, warn func(msg string), overrides ...string) (Config, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		// The *PathError's text would repeat the file name.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return Config{}, &Error{File: path, Msg: pe.Err.Error(), err: err}
		}
		return Config{}, &Error{File: path, Msg: err.Error(), err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Config{}, &Error{File: path, Msg: err.Error()}
	}
	cfg, err := parse(path, text, warn, overrides)
	if err != nil {
		return Config{}, err
	}
	cfg.Path = abs
	cfg.Dir = filepath.Dir(abs)
	return cfg, nil
}

// Parse is Load on text already read; name is used in errors.
func Parse(name string, text []byte, overrides ...string) (Config, error) {
	return parse(name, text, nil, overrides)
}

// parse is Parse, calling warn as LoadWithWarnings does.
func parse(name string, text []byte, warn func(msg string), overrides []string) (Config, error) {
	history := bytes.HasPrefix(text, []byte(resolvedHeader))
	lines := newLineIndex(text)
	// Pass 1: the file alone, so errors carry the file's lines.
	var tree map[string]any
	if _, err := toml.Decode(string(text), &tree); err != nil {
		return Config{}, fileDecodeError(name, err)
	}
	if err := durationError(name, tree, lines, nil); err != nil {
		return Config{}, err
	}
	probe := Default()
	md, err := toml.NewDecoder(bytes.NewReader(text)).Decode(&probe)
	if err != nil {
		return Config{}, fileDecodeError(name, err)
	}
	for _, k := range md.Undecoded() {
		if _, moved := movedKeys[keyString(k)]; (moved && history) || freeForm(k) {
			continue
		}
		return Config{}, &Error{File: name, Line: lines.find(k), Key: keyString(k), Msg: unknownKey(k)}
	}
	if history {
		moved, err := moveKeys(name, tree, &lines)
		if err != nil {
			return Config{}, err
		}
		if len(moved) > 0 && warn != nil {
			var read []string
			for _, k := range moved {
				read = append(read, k+" as "+movedKeys[k])
			}
			warn(fmt.Sprintf("%s: read %s (the run directory was written before they moved)", name, strings.Join(read, ", ")))
		}
	}
	// Pass 2: defaults, then the file, then the overrides, as one tree.
	for _, o := range overrides {
		if err := applyOverride(tree, o); err != nil {
			return Config{}, err
		}
	}
	if err := durationError(name, tree, lines, overrides); err != nil {
		return Config{}, err
	}
	fillLLMDefaults(tree)
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
		return Config{}, &Error{File: "--set", Msg: err.Error()}
	}
	cfg := Default()
	md, err = toml.NewDecoder(&buf).Decode(&cfg)
	if err != nil {
		return Config{}, overrideDecodeError(err, overrides)
	}
	for _, k := range md.Undecoded() {
		if !freeForm(k) {
			return Config{}, &Error{File: "--set", Key: keyString(k), Msg: unknownKey(k)}
		}
	}
	if len(cfg.LLM) == 0 {
		cfg.LLM = map[string]llm.Config{"default": llm.DefaultConfig()}
	}
	cfg.src = &source{name: name, lines: lines, overrides: overrides}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// durationError reports the first duration setting of tree, the file
// name with overrides applied, that is not written as a duration (see
// checkDurations): at its line in the file, or in --set.
func durationError(name string, tree map[string]any, lines lineIndex, overrides []string) error {
	key, msg := checkDurations(tree, configType, "")
	if key == "" {
		return nil
	}
	if overridden(overrides, key) {
		return &Error{File: "--set", Key: key, Msg: msg}
	}
	return &Error{File: name, Line: lines.findNearest(key), Key: key, Msg: msg}
}

func fileDecodeError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	// Type mismatches come as "toml: line N (last key "K"): message".
	if m := typeErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: name, Line: line, Key: m[2], Msg: m[3]}
	}
	return &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

var typeErrRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

func overrideDecodeError(err error, overrides []string) error {
	var pe toml.ParseError
	msg := err.Error()
	key := ""
	if errors.As(err, &pe) {
		msg, key = pe.Message, pe.LastKey
	} else if m := typeErrRE.FindStringSubmatch(msg); m != nil {
		msg, key = m[3], m[2]
	}
	return &Error{File: "--set", Key: key, Msg: strings.TrimPrefix(msg, "toml: ") + " (in " + strings.Join(overrides, " ") + ")"}
}

func overridden(overrides []string, key string) bool {
	for _, o := range overrides {
		if k, _, _ := strings.Cut(o, "="); strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}

// applyOverride sets one dotted key in tree. Numeric path parts index
// arrays of tables: "rewards.0.params.bound=3".
func applyOverride(tree map[string]any, o string) error {
	key, raw, ok := strings.Cut(o, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return &Error{File: "--set", Msg: fmt.Sprintf("%q: want dotted.key=value", o)}
	}
	var v struct{ V any }
	if _, err := toml.Decode("V = "+raw, &v); err != nil {
		v.V = raw // a bare word is a string
	}
	parts := strings.Split(key, ".")
	var cur any = tree
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = v.V
				return nil
			}
			next, ok := c[p]
			if !ok {
				next = map[string]any{}
				c[p] = next
			}
			cur = next
		case []map[string]any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return &Error{File: "--set", Key: key, Msg: fmt.Sprintf("%q is not an index of the %d entries there", p, len(c))}
			}
			if last {
				return &Error{File: "--set", Key: key, Msg: "cannot replace a whole table entry"}
			}
			cur = c[n]
		default:
			return &Error{File: "--set", Key: key, Msg: fmt.Sprintf("%s is not a table", strings.Join(parts[:i], "."))}
		}
	}
	return nil
}

// fillLLMDefaults completes every [llm.NAME] table with the keys of
// llm.DefaultConfig.
func fillLLMDefaults(tree map[string]any) {
	var def map[string]any
	var buf bytes.Buffer
	_ = toml.NewEncoder(&buf).Encode(llm.DefaultConfig())
	_, _ = toml.Decode(buf.String(), &def)
	llms, _ := tree["llm"].(map[string]any)
	if llms == nil {
		return
	}
	for name, v := range llms {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		llms[name] = mergeTables(def, m)
	}
}

func mergeTables(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = mergeTables(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func keyString(k toml.Key) string {
	parts := make([]string, 0, len(k))
	for _, p := range k {
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

// lineIndex finds the line of a key in the file's text.
type lineIndex struct {
	// entries are (table path with array indexes, key, line).
	entries []lineEntry
}

type lineEntry struct {
	path string // e.g. "train.group_size" or "rewards.1.source"
	line int
}

func newLineIndex(text []byte) lineIndex {
	var idx lineIndex
	table := ""
	arrays := map[string]int{}
	for i, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(l, "]]", 2)[0], "[ "))
			n := arrays[name]
			arrays[name] = n + 1
			table = name + "." + strconv.Itoa(n)
			idx.entries = append(idx.entries, lineEntry{table, i + 1})
		case strings.HasPrefix(l, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(l, "]", 2)[0], "[ "))
			// A sub-table of the latest array entry: [env.params] needs no
			// index, but [[rewards]] followed by [rewards.params] does.
			for arr, n := range arrays {
				if rest, ok := strings.CutPrefix(name, arr+"."); ok {
					name = arr + "." + strconv.Itoa(n-1) + "." + rest
				}
			}
			table = name
			idx.entries = append(idx.entries, lineEntry{table, i + 1})
		default:
			k, _, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			k = strings.Trim(strings.TrimSpace(k), `"`)
			p := k
			if table != "" {
				p = table + "." + k
			}
			idx.entries = append(idx.entries, lineEntry{p, i + 1})
		}
	}
	return idx
}

// find returns the line of a decoder key. The decoder reports keys inside
// arrays of tables without an index ("rewards", "source" for any
// [[rewards]]), so the first entry matching with indexes stripped is used.
func (idx lineIndex) find(k toml.Key) int {
	want := keyString(k)
	for _, e := range idx.entries {
		if stripIndexes(e.path) == want {
			return e.line
		}
	}
	return 0
}

// findDotted returns the line of a dotted key that may hold array indexes.
func (idx lineIndex) findDotted(key string) int {
	for _, e := range idx.entries {
		if e.path == key {
			return e.line
		}
	}
	return 0
}

// findNearest returns the line of key, else of the first entry inside it
// ("agents" finds [[agents]]), else of its nearest enclosing table that
// the file spells out; 0 when none is in the file.
func (idx lineIndex) findNearest(key string) int {
	if l := idx.findDotted(key); l > 0 {
		return l
	}
	for _, e := range idx.entries {
		if strings.HasPrefix(e.path, key+".") {
			return e.line
		}
	}
	for {
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return 0
		}
		key = key[:i]
		if l := idx.findDotted(key); l > 0 {
			return l
		}
	}
}

func stripIndexes(p string) string {
	parts := strings.Split(p, ".")
	out := parts[:0]
	for _, s := range parts {
		if _, err := strconv.Atoi(s); err == nil {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, ".")
}
