package wasm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
)

// Info describes a plugin module, as `troupe inspect` prints it.
type Info struct {
	// Path is the module file; Size its length in bytes; SHA256 its hash
	// (what an agentfile pins).
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// ABIVersion is the version the module declares (its troupe_abi_vN
	// export; the highest if several), 0 if none. HostABIVersion is the
	// version this host speaks.
	ABIVersion     int `json:"abi_version"`
	HostABIVersion int `json:"host_abi_version"`
	// Imports lists the imported functions as "module.name"; Exports the
	// exported functions.
	Imports []string `json:"imports"`
	Exports []string `json:"exports"`
	// Env is the env's spec and Capabilities its optional interfaces, if
	// the module serves an env.
	Env          *core.EnvSpec `json:"env,omitempty"`
	Capabilities []string      `json:"capabilities,omitempty"`
	// Reward describes the reward function, if the module serves one.
	Reward *wasmabi.RewardSpec `json:"reward,omitempty"`
}

// Inspect compiles the module at path with the default loader, and, if it
// speaks this host's ABI, runs its open call with no params in a default
// sandbox to read its spec. On an error, the returned Info holds what was
// learnt before it (an ABI mismatch still reports the module's version,
// imports and exports).
func Inspect(ctx context.Context, path string) (Info, error) {
	return defaultLoader.Inspect(ctx, path)
}

// Inspect is [Inspect] with this loader's cache and logger.
func (l *Loader) Inspect(ctx context.Context, path string) (Info, error) {
	info := Info{Path: path, HostABIVersion: wasmabi.Version}
	m, err := l.compile(ctx, core.SourceRef{Scheme: "wasm", Path: path})
	if m == nil && err != nil {
		var ae *ABIError
		if !errors.As(err, &ae) {
			return info, err
		}
	}
	if m == nil {
		// Compiled but rejected: compile again without the checks to
		// describe it.
		m2, cerr := l.compileUnchecked(ctx, path)
		if cerr != nil {
			return info, err
		}
		defer m2.close(ctx)
		describe(&info, m2)
		return info, err
	}
	defer m.close(ctx)
	describe(&info, m)
	in, raw, err := m.openInstance(ctx, openDescribe, nil)
	if err != nil {
		return info, err
	}
	defer in.close()
	spec, err := m.parseSpec(raw)
	if err != nil {
		return info, err
	}
	info.Env, info.Capabilities, info.Reward = spec.Env, spec.Capabilities, spec.Reward
	if info.Env != nil {
		if err := checkExports(m.name, m.cm, envExports, "an env module"); err != nil {
			return info, err
		}
	}
	if info.Reward != nil {
		if err := checkExports(m.name, m.cm, rewardExports, "a reward module"); err != nil {
			return info, err
		}
	}
	return info, nil
}

func describe(info *Info, m *module) {
	info.Size, info.SHA256 = m.size, m.sha256
	if v := abiVersions(m.cm); len(v) > 0 {
		info.ABIVersion = v[len(v)-1]
	}
	for _, f := range m.cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, mod+"."+name)
	}
	for name := range m.cm.ExportedFunctions() {
		info.Exports = append(info.Exports, name)
	}
	slices.Sort(info.Imports)
	info.Imports = slices.Compact(info.Imports)
	slices.Sort(info.Exports)
}

// compileUnchecked compiles a module without the ABI checks, only to
// describe it; no guest code runs.
func (l *Loader) compileUnchecked(ctx context.Context, path string) (*module, error) {
	l.init()
	bin, err := readModule(path, "")
	if err != nil {
		return nil, err
	}
	m := &module{name: path, size: int64(len(bin)), sha256: sha256hex(bin)}
	m.rt = newRuntime(ctx, l, DefaultMemoryLimitMiB, false)
	m.cm, err = m.rt.CompileModule(ctx, bin)
	if err != nil {
		m.rt.Close(ctx)
		return nil, fmt.Errorf("wasm module %s: compile: %w", path, err)
	}
	return m, nil
}
