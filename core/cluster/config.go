package cluster

import (
	"net/url"
	"slices"

	"github.com/troupe-dev/troupe/core"
)

// Config is the [cluster] table of an agentfile: where the rollout
// workers are. Credentials are never part of it (see [Connect]).
type Config struct {
	// NATS is the URL of a NATS server with JetStream, e.g.
	// "nats://nats.internal:4222" ("tls://…" for TLS). Empty (the
	// default): episodes are played by the in-process pool.
	NATS string `toml:"nats"`
}

// DefaultConfig returns the default: no cluster, the in-process pool.
func DefaultConfig() Config { return Config{} }

// Enabled reports whether the configuration names a NATS server.
func (c Config) Enabled() bool { return c.NATS != "" }

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.NATS == "" {
		return nil
	}
	if err := CheckURL(c.NATS); err != nil {
		return core.NewSettingError("nats", "%v", err)
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
