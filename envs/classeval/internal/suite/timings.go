package suite

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Timings are the per-class run times the Runner reports as a run's
// duration, measured once (TestMeasureTimings) and shipped in
// data/timings.json, so that a duration never depends on this run's
// machine, load or worker count.
type Timings struct {
	// Machine and Command say where and how they were measured.
	Machine string `json:"machine"`
	Command string `json:"command"`
	// Classes maps a task id to its figures.
	Classes map[string]ClassTiming `json:"classes"`
	// DefaultTestsS and DefaultExamplesS are used for a class the table
	// lacks (a user's own dataset): the medians of the table.
	DefaultTestsS    float64 `json:"default_tests_s"`
	DefaultExamplesS float64 `json:"default_examples_s"`
}

// ClassTiming is one class's measured wall times in seconds: its full
// unittest suite on the canonical solution, and each method's examples.
type ClassTiming struct {
	TestsS    float64            `json:"tests_s"`
	ExamplesS map[string]float64 `json:"examples_s"`
}

func (t Timings) tests(id string) float64 {
	if c, ok := t.Classes[id]; ok && c.TestsS > 0 {
		return c.TestsS
	}
	return t.DefaultTestsS
}

func (t Timings) examples(id, method string) float64 {
	if s, ok := t.Classes[id].ExamplesS[method]; ok && s > 0 {
		return s
	}
	return t.DefaultExamplesS
}

// EmbeddedTimings returns the shipped timings table.
func EmbeddedTimings() (Timings, error) {
	b, err := dataFS.ReadFile("data/timings.json")
	if err != nil {
		return Timings{}, err
	}
	var t Timings
	if err := json.Unmarshal(b, &t); err != nil {
		return Timings{}, fmt.Errorf("embedded data/timings.json: %w", err)
	}
	if t.DefaultTestsS <= 0 {
		t.DefaultTestsS = 0.2
	}
	if t.DefaultExamplesS <= 0 {
		t.DefaultExamplesS = 0.1
	}
	return t, nil
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// An Exclusion is a class left out because its canonical solution fails
// its own tests on the reference machine.
type Exclusion struct {
	Class  string `json:"class"`
	Reason string `json:"reason"`
}

// EmbeddedExclusions returns the shipped classes whose canonical solution
// fails (data/exclusions.json, written by TestCanonicalAll): the env must
// leave them out.
func EmbeddedExclusions() ([]Exclusion, error) {
	b, err := dataFS.ReadFile("data/exclusions.json")
	if err != nil {
		return nil, err
	}
	var ex []Exclusion
	if err := json.Unmarshal(b, &ex); err != nil {
		return nil, fmt.Errorf("embedded data/exclusions.json: %w", err)
	}
	return ex, nil
}
