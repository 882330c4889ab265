package telemetry

import (
	"context"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/troupe-dev/troupe/internal/genai"
)

// The names of the training metrics, one point per iteration.
const (
	MetricRewardMean      = "troupe.train.reward.mean"
	MetricRewardComponent = "troupe.train.reward.component"
	MetricKL              = "troupe.train.kl"
	MetricClipFraction    = "troupe.train.clip_fraction"
	MetricEntropy         = "troupe.train.entropy"
	MetricGradNorm        = "troupe.train.grad_norm"
	MetricEpisodes        = "troupe.train.episodes"
	MetricFailedEpisodes  = "troupe.train.episodes.failed"
	MetricEnvStepRate     = "troupe.train.env_steps.rate"
)

// Figures are what one training iteration came to: the training
// metrics it records.
type Figures struct {
	RewardMean float64
	// Components are the mean reward components by name.
	Components                          map[string]float64
	KL, ClipFraction, Entropy, GradNorm float64
	Episodes, FailedEpisodes            int
	// EnvStepsPerSecond is the iteration's env steps over its wall time.
	EnvStepsPerSecond float64
}

type trainingInstruments struct {
	reward, component, kl, clip, entropy, gradNorm, stepRate metric.Float64Gauge
	episodes, failed                                         metric.Int64Counter
}

func newTrainingInstruments(m metric.Meter) (trainingInstruments, error) {
	var ti trainingInstruments
	var errs [9]error
	ti.reward, errs[0] = m.Float64Gauge(MetricRewardMean, metric.WithDescription("Mean joint reward of the iteration's scored episodes."))
	ti.component, errs[1] = m.Float64Gauge(MetricRewardComponent, metric.WithDescription("Mean reward component of the iteration, by gen_ai.evaluation.name."))
	ti.kl, errs[2] = m.Float64Gauge(MetricKL, metric.WithDescription("KL divergence of the updated policy from the sampling one."))
	ti.clip, errs[3] = m.Float64Gauge(MetricClipFraction, metric.WithDescription("Fraction of decisions whose ratio was clipped."))
	ti.entropy, errs[4] = m.Float64Gauge(MetricEntropy, metric.WithDescription("Mean policy entropy."))
	ti.gradNorm, errs[5] = m.Float64Gauge(MetricGradNorm, metric.WithDescription("Gradient norm of the last update."))
	ti.stepRate, errs[6] = m.Float64Gauge(MetricEnvStepRate, metric.WithUnit("{step}/s"), metric.WithDescription("Env steps per second of the iteration."))
	ti.episodes, errs[7] = m.Int64Counter(MetricEpisodes, metric.WithUnit("{episode}"), metric.WithDescription("Episodes played."))
	ti.failed, errs[8] = m.Int64Counter(MetricFailedEpisodes, metric.WithUnit("{episode}"), metric.WithDescription("Episodes that failed (counted, never dropped)."))
	for _, err := range errs {
		if err != nil {
			return ti, err
		}
	}
	return ti, nil
}

// Iteration records an iteration's figures as metrics and as attributes
// of its span s.
func (s Span) Iteration(ctx context.Context, f Figures) {
	if !s.recording() {
		return
	}
	ti := &s.t.training
	ti.reward.Record(ctx, f.RewardMean)
	for _, name := range sortedKeys(f.Components) {
		ti.component.Record(ctx, f.Components[name], metric.WithAttributes(genai.EvaluationName.String(name)))
	}
	ti.kl.Record(ctx, f.KL)
	ti.clip.Record(ctx, f.ClipFraction)
	ti.entropy.Record(ctx, f.Entropy)
	ti.gradNorm.Record(ctx, f.GradNorm)
	ti.stepRate.Record(ctx, f.EnvStepsPerSecond)
	ti.episodes.Add(ctx, int64(f.Episodes))
	ti.failed.Add(ctx, int64(f.FailedEpisodes))
	s.span.SetAttributes(
		attribute.Float64(MetricRewardMean, f.RewardMean), attribute.Float64(MetricKL, f.KL),
		attribute.Float64(MetricClipFraction, f.ClipFraction), attribute.Float64(MetricEntropy, f.Entropy),
		attribute.Float64(MetricGradNorm, f.GradNorm), attribute.Int(MetricEpisodes, f.Episodes),
		attribute.Int(MetricFailedEpisodes, f.FailedEpisodes))
}

// sortedKeys returns m's keys in order, so that events and points come
// in the same order on every run.
func sortedKeys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }
