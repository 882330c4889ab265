package llm

import (
	"errors"
	"io"
	"net/url"

	"github.com/troupe-dev/troupe/core"
)

// A Client is a backend that holds connections or files until it is
// closed: what [New] returns.
type Client interface {
	core.LLM
	io.Closer
	// Config returns the settings the backend was built from.
	Config() Config
}

// New returns the backend cfg describes when it calls an endpoint
// (BackendOpenAI), behind the record/replay cache of cfg.Cache when that
// is set; in CacheReplay mode it opens no connection and reads no API key.
// The sim backend writes the env's own text, so it is made per env by
// [NewSim] instead, and New refuses it. Errors about a setting are
// *core.SettingError values naming its key in the table.
func New(cfg Config) (Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Backend == BackendSim {
		return nil, core.NewSettingError("backend", "the sim backend needs the env: build it with NewSim")
	}
	if cfg.Cache != "" && cfg.CacheMode == CacheReplay {
		return cached(offline{Backend: string(cfg.Backend), Model: cfg.Model}, cfg)
	}
	o, err := newOpenAI(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Cache == "" {
		return o, nil
	}
	r, err := cached(o, cfg)
	if err != nil {
		return nil, errors.Join(err, o.Close())
	}
	return r, nil
}

// cached wraps inner in the recorder of cfg.Cache and cfg.CacheMode.
func cached(inner core.LLM, cfg Config) (*recorder, error) {
	r, err := newRecorder(inner, cfg.Cache, cfg.CacheMode)
	if err != nil {
		return nil, core.NewSettingError("cache", "%v", err)
	}
	r.cfg = cfg
	return r, nil
}

// Redacted returns c with the user information (a password, say) removed
// from BaseURL, for writing c where others may read it.
func (c Config) Redacted() Config {
	c.BaseURL = redactURL(c.BaseURL)
	return c
}

// redactURL removes user information from a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
