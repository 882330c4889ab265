package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// Plugin is a plugin file a run's configuration names.
type Plugin struct {
	// Key is the configuration key of its source, e.g. "env.source" or
	// "rewards.1.source".
	Key string `json:"key"`
	// Path is the file: on the trainer, where it was read; on a worker,
	// where the worker plays it from.
	Path string `json:"path"`
	// SHA256 is the file's hex sha256, as the trainer read it.
	SHA256 string `json:"sha256"`
	// Ship is true for a file sent through the object store (a Wasm
	// module, which runs anywhere); false for one every worker must have
	// installed at Path (a go-plugin binary, native code), whose sha256
	// the worker's loader checks.
	Ship bool `json:"ship"`
}

// bundle is the configuration artifact a job names: the resolved
// configuration and its plugin files.
type bundle struct {
	Config  []byte   `json:"config"`
	Plugins []Plugin `json:"plugins,omitempty"`
}

// putBundle hashes the plugin files (storing the shipped ones) and stores
// the bundle; it returns the bundle's hash.
func (r *resources) putBundle(ctx context.Context, config []byte, plugins []Plugin) (string, error) {
	b := bundle{Config: config}
	for _, p := range plugins {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			return "", fmt.Errorf("cluster: plugin of %s: %w", p.Key, err)
		}
		sum := sha256.Sum256(data)
		p.SHA256 = hex.EncodeToString(sum[:])
		if p.Ship {
			if _, err := r.putArtifact(ctx, data); err != nil {
				return "", err
			}
		}
		b.Plugins = append(b.Plugins, p)
	}
	data, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return r.putArtifact(ctx, data)
}

// fetchBundle fetches the bundle of hash h and the shipped plugin files
// into cache (once per file: the cache is keyed by content); the plugins
// it returns name the files to play.
func (r *resources) fetchBundle(ctx context.Context, h, cache string) (bundle, error) {
	data, err := r.getArtifact(ctx, h)
	if err != nil {
		return bundle{}, err
	}
	var b bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return bundle{}, fmt.Errorf("cluster: configuration %s: %w", h[:12], err)
	}
	for i := range b.Plugins {
		p := &b.Plugins[i]
		if !p.Ship {
			continue
		}
		local := filepath.Join(cache, p.SHA256+filepath.Ext(p.Path))
		if _, err := os.Stat(local); err != nil {
			mod, err := r.getArtifact(ctx, p.SHA256)
			if err != nil {
				return bundle{}, err
			}
			if err := os.MkdirAll(cache, 0o755); err != nil {
				return bundle{}, fmt.Errorf("cluster: plugin cache: %w", err)
			}
			if err := atomicfile.WriteFile(local, mod, 0o644); err != nil {
				return bundle{}, fmt.Errorf("cluster: plugin cache: %w", err)
			}
		}
		p.Path = local
	}
	return b, nil
}
