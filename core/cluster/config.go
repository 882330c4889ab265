package cluster

import (
	"net/url"
	"slices"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Config is the [cluster] table of an agentfile: where the rollout
// workers are, and how the trainer's jobs are delivered to them. Each
// field's comment gives its default ([DefaultConfig]) and [Config.Validate]
// its rule. Credentials are never part of it (see [Connect]). The trainer
// sets the delivery settings of the job consumer from it, and sends the
// workers' settings (progress_every, rate_limit_pause, max_rate_limited)
// with every job, so a worker needs no configuration of its own. Trainers
// that share a server share its job consumer: the last one to start sets
// ack_wait and max_deliver for every run's jobs.
type Config struct {
	// NATS is the URL of a NATS server with JetStream, e.g.
	// "nats://nats.internal:4222" ("tls://…" for TLS). Default "": episodes
	// are played by the in-process pool.
	NATS string `toml:"nats"`
	// AckWait is how long a delivered job may go without an ack or a
	// progress report before the server delivers it again (to another
	// worker: the one it was given to is presumed dead). At least 100ms.
	// Default 30s.
	AckWait time.Duration `toml:"ack_wait"`
	// ProgressEvery is how often a worker reports that a job's episode is
	// still running (InProgress), which restarts its ack_wait. 0 (the
	// default) means a third of ack_wait; else more than 0 and less than
	// ack_wait.
	ProgressEvery time.Duration `toml:"progress_every"`
	// MaxDeliver bounds the deliveries of a job: a job that fails on every
	// one (its worker errs, or dies) fails its episode, as a local
	// failure does. At least 1. Default 5.
	MaxDeliver int `toml:"max_deliver"`
	// ResultTTL is how long results are kept in the result bucket (a
	// trainer reads them within the iteration). At least 1s. Default 24h.
	ResultTTL time.Duration `toml:"result_ttl"`
	// RateLimitPause is how long a worker whose episode failed with a
	// rate-limit error of the LLM (status 429) pauses before it takes the
	// next job, doubling with each such failure in a row up to 8× (reset
	// by an episode that is not rate-limited). At least 1ms. Default 5s.
	RateLimitPause time.Duration `toml:"rate_limit_pause"`
	// MaxRateLimited bounds how often a rate-limited job is handed back
	// (published again for any worker; it does not count toward
	// max_deliver): past it the episode fails, as a local failure does.
	// At least 0. Default 10.
	MaxRateLimited int `toml:"max_rate_limited"`
	// WarnAfter is how long the trainer waits for a first result of a
	// batch of jobs before it warns that no worker has taken them (none
	// is running, or none reaches the server). 0 means never. Default 1m.
	WarnAfter time.Duration `toml:"warn_after"`
}

// DefaultConfig returns the defaults documented on [Config]'s fields: no
// cluster, the in-process pool.
func DefaultConfig() Config {
	return Config{
		AckWait: 30 * time.Second, MaxDeliver: 5, ResultTTL: 24 * time.Hour,
		RateLimitPause: 5 * time.Second, MaxRateLimited: 10, WarnAfter: time.Minute,
	}
}

// Enabled reports whether the configuration names a NATS server.
func (c Config) Enabled() bool { return c.NATS != "" }

// Progress returns the interval of a worker's progress reports:
// ProgressEvery, or a third of AckWait when it is 0.
func (c Config) Progress() time.Duration {
	if c.ProgressEvery > 0 {
		return c.ProgressEvery
	}
	return c.AckWait / 3
}

// Validate reports the first setting that cannot work, as a
// *core.SettingError naming its key within the table.
func (c Config) Validate() error {
	if c.NATS != "" {
		if err := CheckURL(c.NATS); err != nil {
			return core.NewSettingError("nats", "%v", err)
		}
	}
	switch {
	case c.AckWait < 100*time.Millisecond:
		return core.NewSettingError("ack_wait", "must be at least 100ms, got %v", c.AckWait)
	case c.ProgressEvery < 0 || c.ProgressEvery >= c.AckWait:
		return core.NewSettingError("progress_every", "must be 0 (a third of ack_wait) or more than 0 and less than ack_wait (%v), got %v", c.AckWait, c.ProgressEvery)
	case c.MaxDeliver < 1:
		return core.NewSettingError("max_deliver", "must be at least 1, got %d", c.MaxDeliver)
	case c.ResultTTL < time.Second:
		return core.NewSettingError("result_ttl", "must be at least 1s, got %v", c.ResultTTL)
	case c.RateLimitPause < time.Millisecond:
		return core.NewSettingError("rate_limit_pause", "must be at least 1ms, got %v", c.RateLimitPause)
	case c.MaxRateLimited < 0:
		return core.NewSettingError("max_rate_limited", "must be at least 0, got %d", c.MaxRateLimited)
	case c.WarnAfter < 0:
		return core.NewSettingError("warn_after", "must be at least 0 (0: never warn), got %v", c.WarnAfter)
	}
	return nil
}

// CheckURL reports a NATS server URL that cannot work: one that is not
// nats://, tls://, ws:// or wss:// with a host, or that carries user
// information (credentials come from the environment, see [Connect]).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) || u.Host == "" {
		return &urlError{raw: raw}
	}
	if u.User != nil {
		return &urlError{raw: raw, creds: true}
	}
	return nil
}

type urlError struct {
	raw   string
	creds bool
}

func (e *urlError) Error() string {
	if e.creds {
		return "the NATS URL carries credentials; give them in $" + EnvCreds + " (a creds file) or $" + EnvUser + "/$" + EnvPassword + " instead"
	}
	return "must be a NATS server URL such as \"nats://127.0.0.1:4222\" (nats://, tls://, ws:// or wss://), got \"" + e.raw + "\""
}
