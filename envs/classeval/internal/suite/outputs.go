package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/troupe-dev/troupe/internal/codetokens"
)

// Mode is how a model generated its code (ClassEval's generation
// strategies).
type Mode string

// The modes of the benchmark's outputs.
const (
	// ModeDirect (m_dire): each method on its own, from the skeleton.
	ModeDirect Mode = "m_dire"
	// ModeIter (m_iter): methods one after another, each with the methods
	// generated before it in context.
	ModeIter Mode = "m_iter"
	// ModeClassGreedy (c_t0): the whole class at once, greedy decoding.
	ModeClassGreedy Mode = "c_t0"
	// ModeClassSampled (c_5): the whole class, several samples.
	ModeClassSampled Mode = "c_5"
)

// Modes lists the modes in the order completions of one method are
// usually tried: method-level first.
var Modes = []Mode{ModeDirect, ModeIter, ModeClassGreedy, ModeClassSampled}

// MethodLevel reports whether the mode generated one reply per method
// (raw_output) rather than whole classes (predict).
func (m Mode) MethodLevel() bool { return m == ModeDirect || m == ModeIter }

// A Completion is one real completion of one method by one model: the
// method's code as extracted from the reply, and what the reply cost.
type Completion struct {
	Extraction
	// Model and Mode say who wrote it and how; Sample numbers the
	// whole-class samples of ModeClassSampled (0 otherwise).
	Model  string
	Mode   Mode
	Sample int
	// Tokens counts the tokens ([Tokens]) of Source (0 when NotExtracted).
	Tokens int
	// ReplyTokens counts the tokens of the whole reply the model wrote:
	// for a method-level mode the reply for this method (without an
	// echoed instruction prompt), for a class-level mode the whole class
	// sample (shared by all its methods).
	ReplyTokens int
}

// Impl returns the completion as an implementation for [Class.Assemble]
// (the zero Impl when nothing was extracted).
func (c Completion) Impl() Impl {
	return Impl{Source: c.Source, Imports: c.Imports, Helpers: c.Helpers}
}

// Outputs are the completions of an outputs directory, extracted.
type Outputs struct {
	// Dir names where they were loaded from.
	Dir    string
	models []string
	modes  map[string][]Mode
	// comps[model][mode][class id][method index] -> samples
	comps  map[string]map[Mode]map[string][][]Completion
	report ExtractionReport
}

// Models returns the models, sorted.
func (o *Outputs) Models() []string { return slices.Clone(o.models) }

// ModesOf returns the modes model has outputs for, in [Modes] order.
func (o *Outputs) ModesOf(model string) []Mode { return slices.Clone(o.modes[model]) }

// HasMode reports whether model has outputs in mode.
func (o *Outputs) HasMode(model string, mode Mode) bool {
	return slices.Contains(o.modes[model], mode)
}

// Completions returns model's completions in mode of method m of class c:
// one for every mode but ModeClassSampled, which has one per sample. Nil
// when the model has no output in that mode for the class.
func (o *Outputs) Completions(model string, mode Mode, c *Class, m *Method) []Completion {
	byClass := o.comps[model][mode][c.ID]
	if byClass == nil || m.Index >= len(byClass) {
		return nil
	}
	return byClass[m.Index]
}

// Report returns the extraction report.
func (o *Outputs) Report() ExtractionReport { return o.report }

// ExtractionReport counts, per model and mode, the method completions by
// [ExtractStatus], and lists every one not Extracted.
type ExtractionReport struct {
	Rows     []ExtractionRow
	Failures []ExtractionFailure
}

// ExtractionRow counts one model's completions in one mode.
type ExtractionRow struct {
	Model string
	Mode  Mode
	// Completions is the number of (class, method, sample) completions
	// expected: one per method of every dataset class (times samples).
	Completions int
	Extracted   int
	Truncated   int
	Stub        int
	Missing     int
}

// ExtractionFailure is one completion not Extracted.
type ExtractionFailure struct {
	Model  string
	Mode   Mode
	Sample int
	Class  string
	Method string
	Status ExtractStatus
	Reason string
}

// String renders the report as an aligned table.
func (r ExtractionReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %-7s %6s %9s %9s %5s %7s %9s\n", "model", "mode", "total", "extracted", "truncated", "stub", "missing", "unusable%")
	var tot ExtractionRow
	line := func(model string, mode Mode, row ExtractionRow) {
		bad := row.Truncated + row.Stub + row.Missing
		fmt.Fprintf(&b, "%-22s %-7s %6d %9d %9d %5d %7d %8.1f%%\n", model, mode, row.Completions, row.Extracted, row.Truncated, row.Stub, row.Missing, 100*float64(bad)/float64(max(1, row.Completions)))
	}
	for _, row := range r.Rows {
		line(row.Model, row.Mode, row)
		tot.Completions += row.Completions
		tot.Extracted += row.Extracted
		tot.Truncated += row.Truncated
		tot.Stub += row.Stub
		tot.Missing += row.Missing
	}
	line("all", "", tot)
	return b.String()
}

// outputFileRe matches MODEL_100_MODE.json[.gz] (the "_100" is optional).
var outputFileRe = regexp.MustCompile(`^(.+?)(?:_100)?_(m_dire|m_iter|c_t0|c_5)\.json(?:\.gz)?$`)

// rawOutput mirrors one task of an outputs file.
type rawOutput struct {
	TaskID    *string  `json:"task_id"`
	Predict   []string `json:"predict"`
	RawOutput []string `json:"raw_output"`
}

// LoadOutputs reads the outputs directory dir (files MODEL_100_MODE.json
// or .json.gz) for the classes of ds and extracts every completion.
// Other files are ignored but a .json or .json.gz whose name does not
// parse is an error, as is a file that does not follow the schema; errors
// name the file, the task and the field. Tasks not in ds are skipped.
func LoadOutputs(dir string, ds *Dataset) (*Outputs, error) {
	return loadOutputs(os.DirFS(dir), ".", dir, ds)
}

func loadOutputs(fsys fs.FS, root, name string, ds *Dataset) (*Outputs, error) {
	entries, err := fs.ReadDir(fsys, root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such outputs directory", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the outputs directory: %w", name, pathCause(err))
	}
	o := &Outputs{Dir: name, modes: map[string][]Mode{}, comps: map[string]map[Mode]map[string][][]Completion{}}
	for _, e := range entries {
		fn := e.Name()
		if e.IsDir() || !(strings.HasSuffix(fn, ".json") || strings.HasSuffix(fn, ".json.gz")) {
			continue
		}
		m := outputFileRe.FindStringSubmatch(fn)
		file := path.Join(name, fn)
		if m == nil {
			return nil, fmt.Errorf("%s: name is not MODEL_100_MODE.json[.gz] with MODE one of m_dire, m_iter, c_t0, c_5", file)
		}
		model, mode := m[1], Mode(m[2])
		if o.HasMode(model, mode) {
			return nil, fmt.Errorf("%s: a second file for model %s, mode %s", file, model, mode)
		}
		data, err := fs.ReadFile(fsys, path.Join(root, fn))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, pathCause(err))
		}
		if err := o.addFile(file, data, model, mode, ds); err != nil {
			return nil, err
		}
	}
	if len(o.models) == 0 {
		return nil, fmt.Errorf("%s: no outputs file (MODEL_100_MODE.json[.gz])", name)
	}
	sort.Strings(o.models)
	for _, ms := range o.modes {
		slices.SortFunc(ms, func(a, b Mode) int { return slices.Index(Modes, a) - slices.Index(Modes, b) })
	}
	slices.SortFunc(o.report.Rows, func(a, b ExtractionRow) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return slices.Index(Modes, a.Mode) - slices.Index(Modes, b.Mode)
	})
	slices.SortStableFunc(o.report.Failures, func(a, b ExtractionFailure) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return slices.Index(Modes, a.Mode) - slices.Index(Modes, b.Mode)
	})
	return o, nil
}

// pathCause is err without the fs.PathError around it, whose path is the
// DirFS's relative one ("."): the callers name the real path themselves.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// addFile parses and extracts one outputs file.
func (o *Outputs) addFile(file string, data []byte, model string, mode Mode, ds *Dataset) error {
	data, err := readMaybeGzip(file, data)
	if err != nil {
		return err
	}
	var tasks []*rawOutput
	if err := json.Unmarshal(data, &tasks); err != nil {
		return fmt.Errorf("%s: not a JSON array of {task_id, predict, raw_output}: %w", file, err)
	}
	byClass := map[string][][]Completion{}
	seen := map[string]bool{}
	for i, t := range tasks {
		if t == nil || t.TaskID == nil || *t.TaskID == "" {
			return fmt.Errorf("%s: task %d: task_id: missing", file, i)
		}
		id := *t.TaskID
		where := fmt.Sprintf("%s: task %d (%s)", file, i, id)
		if seen[id] {
			return fmt.Errorf("%s: task_id appears twice", where)
		}
		seen[id] = true
		c := ds.Class(id)
		if c == nil {
			continue
		}
		comps, err := extractTask(c, t, mode)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for j := range comps {
			for k := range comps[j] {
				comps[j][k].Model = model
			}
		}
		byClass[id] = comps
	}
	if o.comps[model] == nil {
		o.comps[model] = map[Mode]map[string][][]Completion{}
		o.models = append(o.models, model)
	}
	o.comps[model][mode] = byClass
	o.modes[model] = append(o.modes[model], mode)
	row := ExtractionRow{Model: model, Mode: mode}
	for _, c := range ds.Classes {
		comps := byClass[c.ID]
		for j, m := range c.Methods {
			if comps == nil {
				row.Completions++
				row.Missing++
				o.report.Failures = append(o.report.Failures, ExtractionFailure{Model: model, Mode: mode, Class: c.ID, Method: m.Name, Status: NotExtracted, Reason: "no output for the task"})
				continue
			}
			for _, comp := range comps[j] {
				row.Completions++
				switch comp.Status {
				case Extracted:
					row.Extracted++
					continue
				case ExtractedStub:
					row.Stub++
				case ExtractedTruncated:
					row.Truncated++
				default:
					row.Missing++
				}
				o.report.Failures = append(o.report.Failures, ExtractionFailure{Model: model, Mode: mode, Sample: comp.Sample, Class: c.ID, Method: m.Name, Status: comp.Status, Reason: comp.Reason})
			}
		}
	}
	o.report.Rows = append(o.report.Rows, row)
	return nil
}

// extractTask extracts every method of c from one task's outputs.
func extractTask(c *Class, t *rawOutput, mode Mode) ([][]Completion, error) {
	out := make([][]Completion, len(c.Methods))
	if !mode.MethodLevel() {
		if len(t.Predict) == 0 {
			return nil, fmt.Errorf("predict: empty")
		}
		for s, pred := range t.Predict {
			rt := codetokens.Count(pred)
			parsed := parseReply(pred)
			for j, m := range c.Methods {
				x := parsed.extract(c, m, false)
				out[j] = append(out[j], Completion{Extraction: x, Mode: mode, Sample: s, Tokens: codetokens.Count(x.Source), ReplyTokens: rt})
			}
		}
		return out, nil
	}
	if t.RawOutput == nil {
		return nil, fmt.Errorf("raw_output: missing (mode %s is method-level)", mode)
	}
	replies := alignReplies(c, t.RawOutput)
	for j, m := range c.Methods {
		r, ok := replies[j]
		if !ok {
			out[j] = []Completion{{Extraction: Extraction{Status: NotExtracted, Reason: fmt.Sprintf("no reply for it (raw_output has %d replies for %d methods)", len(t.RawOutput), len(c.Methods))}, Mode: mode}}
			continue
		}
		x := Extract(r, c, m)
		out[j] = []Completion{{Extraction: x, Mode: mode, Tokens: codetokens.Count(x.Source), ReplyTokens: codetokens.Count(cleanReply(r))}}
	}
	return out, nil
}

// alignReplies maps method indexes to their raw replies: by position when
// there is one reply per method, else each method to the first later
// reply that defines it (the benchmark's outputs hold, for one class, a
// reply for a method the dataset no longer has).
func alignReplies(c *Class, raw []string) map[int]string {
	out := map[int]string{}
	if len(raw) == len(c.Methods) {
		for j := range raw {
			out[j] = raw[j]
		}
		return out
	}
	next := 0
	for j, m := range c.Methods {
		for k := next; k < len(raw); k++ {
			if _, ok := findDef(strings.Split(cleanReply(raw[k]), "\n"), m.Name); ok {
				out[j] = raw[k]
				next = k + 1
				break
			}
		}
	}
	return out
}
