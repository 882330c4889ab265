package rewards

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/rewards/consistency"
)

func init() {
	core.RegisterReward("writing.consistency", func(p map[string]any) (core.RewardFunc, error) {
		return NewWritingConsistency(p)
	})
}

// WritingConsistencyParams are the params of "writing.consistency".
type WritingConsistencyParams struct {
	// ReadabilityBound is the Flesch–Kincaid grade spread across sections
	// that passes in full (default consistency.DefaultReadabilityBound).
	ReadabilityBound float64 `json:"readability_bound"`
	// MinSectionWords is the smallest section whose readability is judged
	// (default consistency.DefaultMinSectionWords).
	MinSectionWords int `json:"min_section_words"`
}

// WritingConsistency scores the final document of a writing episode with
// consistency.Check: component "quality" = the report's Score, metrics
// "consistency" = Score, "consistency.coverage" = Coverage and
// "consistency.NAME" = each check's Pass (seventeen checks, among them
// "consistency.terminology", "consistency.cross_references",
// "consistency.duplication" and "consistency.fluency"; see
// rewards/consistency).
type WritingConsistency struct {
	opts consistency.Options
}

// NewWritingConsistency makes the reward from its params (see
// WritingConsistencyParams); unknown keys and bad values are errors.
func NewWritingConsistency(params map[string]any) (*WritingConsistency, error) {
	p := WritingConsistencyParams{
		ReadabilityBound: consistency.DefaultReadabilityBound,
		MinSectionWords:  consistency.DefaultMinSectionWords,
	}
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("reward writing.consistency: %w", err)
	}
	if !(p.ReadabilityBound > 0) {
		return nil, fmt.Errorf("reward writing.consistency: params: key \"readability_bound\" must be > 0, got %v", p.ReadabilityBound)
	}
	if p.MinSectionWords < 1 {
		return nil, fmt.Errorf("reward writing.consistency: params: key \"min_section_words\" must be ≥ 1, got %d", p.MinSectionWords)
	}
	return &WritingConsistency{opts: consistency.Options{
		ReadabilityBound: p.ReadabilityBound,
		MinSectionWords:  p.MinSectionWords,
	}}, nil
}

// Name returns "writing.consistency".
func (*WritingConsistency) Name() string { return "writing.consistency" }

// Components returns ["quality"].
func (*WritingConsistency) Components() []string { return []string{"quality"} }

// Score checks ep.Artifacts[core.ArtifactDocument] ("document.md"). It is
// an error if the episode has no such artifact.
func (w *WritingConsistency) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	doc, ok := ep.Artifacts[core.ArtifactDocument]
	if !ok {
		return nil, nil, fmt.Errorf("reward writing.consistency: the episode has no artifact %q (the writing env puts its final document there)", core.ArtifactDocument)
	}
	r := w.opts.Check(doc)
	metrics := make(map[string]float64, len(r.Checks)+2)
	metrics[core.MetricConsistency] = r.Score
	metrics[core.MetricConsistency+".coverage"] = r.Coverage
	for _, c := range r.Checks {
		metrics[core.MetricConsistency+"."+c.Name] = c.Pass
	}
	return map[string]float64{"quality": r.Score}, metrics, nil
}
