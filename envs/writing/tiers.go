package writing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
	"github.com/troupe-dev/troupe/envs/writing/internal/restyle"
	"github.com/troupe-dev/troupe/internal/ratelimit"
)

// Tier is the model behind a writer: its speed and price (published
// figures, see [BuiltinTiers]) and its writing habits and error rates
// (simulation parameters: assumptions, not measurements).
type Tier struct {
	// Name is how params and observations name the tier.
	Name string
	// BaseLatency is the fixed seconds of a call (time to first token).
	BaseLatency float64
	// PrefillTPS and DecodeTPS are prompt and completion tokens per second.
	PrefillTPS float64
	DecodeTPS  float64
	// InputUSDPerM and OutputUSDPerM are the list prices per million
	// prompt and completion tokens.
	InputUSDPerM  float64
	OutputUSDPerM float64

	// Habits is how the model writes Markdown when it has not read the
	// house style (a simulation parameter).
	Habits restyle.Style
	// StyleFollowProb is the chance, per habit and unit, that a writer who
	// has read the house style follows it.
	StyleFollowProb float64
	// StructureSlipProb is the chance per unit of a structure slip (a
	// template section renamed, a heading one level too deep) by a writer
	// who has not read the outline conventions (read_style).
	StructureSlipProb float64
	// TermDriftProb is the chance, per term a unit uses, that a writer who
	// has seen no text using the term writes it in another surface form
	// than the unit that introduced it.
	TermDriftProb float64
	// RetitleProb is the chance that a writer words a subsection heading
	// its own way instead of as the outline gives it.
	RetitleProb float64
	// RepeatProb is the chance that a writer drafting a unit without
	// having read a unit it builds on restates one of that unit's
	// paragraphs.
	RepeatProb float64
}

// BuiltinTiers returns the tiers params may name. Speed and price are
// published figures (retrieved for this table; they change over time):
//
//	tier              TTFT    decode     $/M in  $/M out  source
//	gpt-4o-mini       0.58 s   61 tok/s   0.15    0.60    Artificial Analysis via tokencost.app/compare/gpt-4o-vs-gpt-4o-mini; openai.com/api/pricing
//	gpt-4o            0.53 s  135 tok/s   2.50   10.00    same
//	claude-3.5-haiku  0.81 s   68 tok/s   0.80    4.00    artificialanalysis.ai/models/claude-3-5-haiku/providers (Anthropic 68 tok/s; lowest TTFT 0.81 s)
//
// Prompt throughput is not published per model; every tier assumes 2000
// tokens/s (the runtime's sim default). Habits and error rates are
// simulation parameters, stated here as assumptions: the larger model
// follows instructions more reliably (style 0.995 vs 0.98/0.99, fewer
// slips, drifts, retitles and repeats); each model has its own Markdown
// habits (the mini model writes Title Case headings and "*" emphasis, the
// Claude model British spelling and "*" bullets).
func BuiltinTiers() []Tier {
	return []Tier{
		{
			Name: "gpt-4o-mini", BaseLatency: 0.58, PrefillTPS: 2000, DecodeTPS: 61, InputUSDPerM: 0.15, OutputUSDPerM: 0.60,
			Habits: restyle.Style{Heading: markdown.HeadingATX, Case: markdown.CaseTitle, Bullet: markdown.BulletDash,
				Emphasis: markdown.EmphasisStar, Strong: markdown.StrongStar, Code: markdown.CodeBacktick,
				Spelling: markdown.SpellingUS, Person: markdown.PersonPlural},
			StyleFollowProb: 0.98, StructureSlipProb: 0.06, TermDriftProb: 0.5, RetitleProb: 0.25, RepeatProb: 0.5,
		},
		{
			Name: "gpt-4o", BaseLatency: 0.53, PrefillTPS: 2000, DecodeTPS: 135, InputUSDPerM: 2.50, OutputUSDPerM: 10.00,
			Habits: restyle.Style{Heading: markdown.HeadingATX, Case: markdown.CaseSentence, Bullet: markdown.BulletDash,
				Emphasis: markdown.EmphasisUnderscore, Strong: markdown.StrongStar, Code: markdown.CodeBacktick,
				Spelling: markdown.SpellingUS, Person: markdown.PersonPlural},
			StyleFollowProb: 0.995, StructureSlipProb: 0.03, TermDriftProb: 0.35, RetitleProb: 0.15, RepeatProb: 0.35,
		},
		{
			Name: "claude-3.5-haiku", BaseLatency: 0.81, PrefillTPS: 2000, DecodeTPS: 68, InputUSDPerM: 0.80, OutputUSDPerM: 4.00,
			Habits: restyle.Style{Heading: markdown.HeadingATX, Case: markdown.CaseSentence, Bullet: markdown.BulletStar,
				Emphasis: markdown.EmphasisStar, Strong: markdown.StrongUnderscore, Code: markdown.CodeBacktick,
				Spelling: markdown.SpellingUK, Person: markdown.PersonSingular},
			StyleFollowProb: 0.99, StructureSlipProb: 0.04, TermDriftProb: 0.45, RetitleProb: 0.2, RepeatProb: 0.45,
		},
	}
}

// BuiltinRateLimits are published rate limits a team's shared endpoint
// may have (the default pool of rate_limits), as requests and tokens per
// minute:
//
//	  500 RPM,  30 000 TPM  OpenAI usage tier 1, gpt-4o
//	  500 RPM, 200 000 TPM  OpenAI usage tier 1, gpt-4o-mini
//	   50 RPM,  48 000 TPM  Anthropic tier 1 (40 000 input + 8 000 output TPM)
//	1 000 RPM,  96 000 TPM  Anthropic tier 2 (80 000 input + 16 000 output TPM)
//
// (platform.openai.com/docs/guides/rate-limits, docs.anthropic.com rate
// limits; the Anthropic input and output limits are summed, as the
// limiter counts prompt and completion tokens together.)
func BuiltinRateLimits() []ratelimit.Config {
	return []ratelimit.Config{
		{RequestsPerMinute: 500, TokensPerMinute: 30000},
		{RequestsPerMinute: 500, TokensPerMinute: 200000},
		{RequestsPerMinute: 50, TokensPerMinute: 48000},
		{RequestsPerMinute: 1000, TokensPerMinute: 96000},
	}
}

// scaleErrors returns the tier with every error rate multiplied by s and
// capped at 1 (the error of style following is 1 − StyleFollowProb); s = 1
// returns it unchanged, bit for bit.
func (t Tier) scaleErrors(s float64) Tier {
	if s == 1 {
		return t
	}
	scale := func(p float64) float64 { return math.Min(1, p*s) }
	t.StyleFollowProb = 1 - scale(1-t.StyleFollowProb)
	t.StructureSlipProb = scale(t.StructureSlipProb)
	t.TermDriftProb = scale(t.TermDriftProb)
	t.RetitleProb = scale(t.RetitleProb)
	t.RepeatProb = scale(t.RepeatProb)
	return t
}

// tierByName returns the built-in tier called name.
func tierByName(name string) (Tier, bool) {
	for _, t := range BuiltinTiers() {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}

// tierNames lists the built-in tiers' names.
func tierNames() string {
	var n []string
	for _, t := range BuiltinTiers() {
		n = append(n, fmt.Sprintf("%q", t.Name))
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// drawTeam draws each writer's tier uniformly from pool.
func drawTeam(rng *rand.Rand, pool []Tier, writers int) []Tier {
	team := make([]Tier, writers)
	for i := range team {
		team[i] = pool[rng.IntN(len(pool))]
	}
	return team
}

// latency is the tier's time for one call.
func (t Tier) latency(prompt, completion int) float64 {
	return t.BaseLatency + float64(prompt)/t.PrefillTPS + float64(completion)/t.DecodeTPS
}

// usd is the tier's price of one call.
func (t Tier) usd(prompt, completion int) float64 {
	return (float64(prompt)*t.InputUSDPerM + float64(completion)*t.OutputUSDPerM) / 1e6
}
